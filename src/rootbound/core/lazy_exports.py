"""Package names that load on first use (PEP 562).

``rootbound serve --help``, ``rootbound audit --help``, ``--version`` and usage errors import the packages whose
flags they print; with eager ``__init__`` imports each of them paid for the SDK (~0.9-1.2 s) to print a few lines.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, homes: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose public name ``n`` lives in its submodule
    ``homes[n]``; a name is imported on first access, then cached in the package's namespace.

    A lazy name must not also name a submodule: importing that submodule binds the module to the package's
    attribute first, and the name would then never reach ``__getattr__``.
    """
    if clash := sorted(set(homes) & set(homes.values())):
        raise ValueError(f"{package}: lazy names that are also submodules: {clash}")
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
