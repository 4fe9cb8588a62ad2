"""The pinned conformance runner's resources scenarios against ``rootbound serve`` (issue 49), pinned outcome by
outcome so a change either way is seen.

A workspace server has no resources of the runner's fixture server: ``resources-read-text``, ``-read-binary``,
``-templates-read``, ``-subscribe`` and ``-unsubscribe`` ask for ``test://`` URIs, which rootbound answers with
SEP-2164's ``Resource not found`` (a scheme it does not serve); they are pinned as exactly that. Not pinned: the
2026-07-28 runs. The runner's client declares ``roots`` there (its default capabilities) and answers no input
round, so a resources request, which like a tool call needs the client's roots, gets the ``input_required`` round
asking for them, and the runner scores that as a missing ``resources`` array (``docs/resources.md``).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers.processes import DEPS, require
from tests.helpers.serve_process import http_serve
from tests.judges.conformance.test_conformance import BAD, Run, _conformance

HANDSHAKE = "2025-11-25"
PASSES = (("resources-list", HANDSHAKE),)
FIXTURE_URIS = tuple(
    (name, HANDSHAKE)
    for name in (
        "resources-read-text",
        "resources-read-binary",
        "resources-templates-read",
        "resources-subscribe",
        "resources-unsubscribe",
    )
)
SCENARIOS = PASSES + FIXTURE_URIS


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    require(DEPS / "conformance" / "node_modules" / ".bin" / "conformance", "the conformance runner")
    work = tmp_path_factory.mktemp("resources-conformance") / "work"
    (work / "sub").mkdir(parents=True)
    (work / "notes.md").write_text("hello\n")
    out = tmp_path_factory.mktemp("resources-conformance-runs")
    with http_serve(["--insecure-no-auth", str(work)]) as url:

        def one(item: tuple[str, str]) -> Run:
            scenario, spec = item
            return _conformance(["server", "--url", url], scenario, spec, Path(out / f"{scenario}-{spec}"))

        with ThreadPoolExecutor(3) as pool:
            yield {f"{run.scenario}@{run.spec}": run for run in pool.map(one, SCENARIOS)}


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("scenario", "spec"), PASSES)
def test_resources_scenario_passes(runs: dict[str, Run], scenario: str, spec: str) -> None:
    run = runs[f"{scenario}@{spec}"]
    assert run.checks and not [c for c in run.checks if c["status"] in BAD], run.output[-3000:]


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("scenario", "spec"), FIXTURE_URIS)
def test_fixture_uri_scenarios_are_not_found_and_nothing_else(runs: dict[str, Run], scenario: str, spec: str) -> None:
    run = runs[f"{scenario}@{spec}"]
    failed = {c["id"]: c.get("errorMessage", "") for c in run.checks if c["status"] in BAD}
    assert failed == {scenario: "Failed: Resource not found"}, run.output[-3000:]
