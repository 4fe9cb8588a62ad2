"""Lazy package names (PEP 562): what the public packages export is what eager imports gave."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from rootbound.core.lazy_exports import lazy_names


@pytest.mark.parametrize("package", ["rootbound.workspace", "rootbound.audit"])
def test_every_exported_name_is_the_object_its_home_module_defines(package: str) -> None:
    """Each name in ``__all__`` resolves (in a fresh interpreter, so nothing was preloaded) to the object its home
    module defines, not to a submodule of the same name, and ``dir()`` lists it."""
    code = (
        f"import importlib, inspect, {package} as p\n"
        "for name in p.__all__:\n"
        "    value = getattr(p, name)\n"
        "    assert not inspect.ismodule(value), name\n"
        "    assert name in dir(p), name\n"
        "    if inspect.isclass(value) or inspect.isfunction(value):\n"
        "        assert getattr(importlib.import_module(value.__module__), value.__name__) is value, name\n"
        "print(len(p.__all__))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert int(result.stdout) == len(importlib.import_module(package).__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    workspace = importlib.import_module("rootbound.workspace")
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        _ = workspace.nothing


def test_a_lazy_name_that_is_also_a_submodule_is_refused() -> None:
    """``judge`` is both ``rootbound.audit.judge`` (module) and its function: lazily, importing the runner (which
    imports the module) would leave the package's ``judge`` bound to the module."""
    with pytest.raises(ValueError, match=r"lazy names that are also submodules: \['judge'\]"):
        lazy_names("rootbound.audit", {"judge": "judge"})
