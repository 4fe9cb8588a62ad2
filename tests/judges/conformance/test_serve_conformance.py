"""The official conformance runner scores ``rootbound serve DIR --http 127.0.0.1:0`` itself (issue 35 #5).

``test_conformance.py`` scores a fixture server built on ``RootsService``; this runs the pinned runner against the
real workspace server, on every scenario that tests what a workspace server is: the handshake (``server-initialize``,
``ping``, ``server-session-lifecycle``), ``tools-list``, the HTTP transport (``dns-rebinding-protection``,
``server-sse-multiple-streams``, ``http-header-validation``), stateless 2026-07-28 serving (``server-stateless``) and
``input-required-result-unsupported-methods`` (no input round on a request that cannot have one).

Left out, because each calls a tool of the runner's own fixture server that a workspace server does not have (and
would be scored on rootbound's unknown-tool error, not on what the scenario tests): every ``tools-call-*`` scenario
(``test_simple_text``, ``test_image_content``, ``test_tool_with_progress``, ...), ``json-schema-2020-12``
(``json_schema_2020_12_tool``) and the other ``input-required-result-*`` scenarios (``test_input_required_*``
tools; ``validate-input``'s second check passes only because the fixture tool is unknown, and ``non-tool-request``
needs a prompt that asks for input). Also out: the prompts, resources, completion, logging and subscription
scenarios (capabilities rootbound serve does not declare), ``server-sse-polling`` (only optional warnings) and
``caching`` (it calls ``prompts/list`` and ``resources/list``).

``server-stateless`` scores 24 of its 28 checks here (three of them on the listen stream, served since issue 49):
the other four are the runner's "Not testable: server does not list the diagnostic tool"
(``test_missing_capability`` twice, ``test_streaming_elicitation``, ``test_logging_tool``, all fixture tools). They
are pinned below as exactly those four, each with that reason, and the behaviour they stand for is checked with
rootbound's own tools in ``test_missing_capability_is_32021_with_http_400``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import pytest

from tests.helpers.processes import DEPS, report, require
from tests.helpers.serve_process import http_serve
from tests.judges.conformance.test_conformance import BAD, Run, _conformance, _server_problems, _table

SCENARIOS = (
    ("server-initialize", "2025-11-25"),
    ("ping", "2025-11-25"),
    ("server-session-lifecycle", "2025-11-25"),
    ("tools-list", "2025-11-25"),
    ("tools-list", "2026-07-28"),
    ("dns-rebinding-protection", "2025-11-25"),
    ("dns-rebinding-protection", "2026-07-28"),
    ("server-sse-multiple-streams", "2025-11-25"),
    ("server-sse-multiple-streams", "2026-07-28"),
    ("http-header-validation", "2026-07-28"),
    ("server-stateless", "2026-07-28"),
    ("input-required-result-unsupported-methods", "2026-07-28"),
)
FIXTURE_TOOL_CHECKS = {
    "sep-2575-server-rejects-undeclared-capability": "test_missing_capability",
    "sep-2575-missing-capability-http-400": "test_missing_capability",
    "sep-2575-http-server-no-independent-requests-on-stream": "test_streaming_elicitation",
    "sep-2575-server-no-log-without-loglevel": "test_logging_tool",
}
"""server-stateless checks that need a tool of the runner's fixture server (see the module docstring)."""
WORKERS = 3


def _problems(run: Run) -> list[str]:
    problems = _server_problems(run)
    if run.scenario == "server-stateless":
        untestable = {
            c["id"]
            for c in run.checks
            if c["status"] == "FAILURE"
            and c["id"] in FIXTURE_TOOL_CHECKS
            and f"diagnostic tool '{FIXTURE_TOOL_CHECKS[c['id']]}'" in c.get("errorMessage", "")
        }
        problems = [p for p in problems if p.split(":", 1)[0] not in untestable and not p.startswith("runner exit")]
        if untestable != set(FIXTURE_TOOL_CHECKS):
            problems.append(f"the fixture-tool checks changed: {sorted(untestable)} (update FIXTURE_TOOL_CHECKS)")
    return problems


@pytest.fixture(scope="module")
def conformance_bin() -> Path:
    require(DEPS / "conformance" / "node_modules" / ".bin" / "node", "Node 22 (npm package node@22)")
    return require(DEPS / "conformance" / "node_modules" / ".bin" / "conformance", "the conformance runner")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("serve-conformance")
    (work / "notes.md").write_text("hello\n")
    with http_serve([str(work)]) as url:
        yield url


@pytest.fixture(scope="module")
def runs(
    conformance_bin: Path, served: str, tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> dict[str, Run]:
    out = tmp_path_factory.mktemp("serve-conformance-runs")

    def one(item: tuple[str, str]) -> Run:
        scenario, spec = item
        return _conformance(["server", "--url", served], scenario, spec, out / f"{scenario}-{spec}")

    with ThreadPoolExecutor(WORKERS) as pool:
        done = list(pool.map(one, SCENARIOS))
    problems = {f"{run.scenario}@{run.spec}": _problems(run) for run in done}
    lines = _table(done, problems)
    lines += [
        f"not testable on a workspace server: server-stateless:{c} (fixture tool {t})"
        for c, t in FIXTURE_TOOL_CHECKS.items()
    ]
    report(pytestconfig, f"conformance runner: scenarios against rootbound serve ({served})", lines)
    return {f"{run.scenario}@{run.spec}": run for run in done}


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("scenario", "spec"), SCENARIOS)
def test_serve_scenario(runs: dict[str, Run], scenario: str, spec: str) -> None:
    run = runs[f"{scenario}@{spec}"]
    problems = _problems(run)
    assert not problems, f"{scenario}@{spec}: " + "; ".join(problems) + "\n" + run.output[-3000:]


@pytest.mark.timeout(300)
def test_server_stateless_scores_every_check_a_workspace_server_can_be_asked(runs: dict[str, Run]) -> None:
    run = runs["server-stateless@2026-07-28"]
    failed = sorted(c["id"] for c in run.checks if c["status"] in BAD)
    assert failed == sorted(FIXTURE_TOOL_CHECKS)
    assert run.summary() == "Passed: 24/28, 4 failed, 0 warnings"  # 3 more since subscriptions/listen is served
    (unknown,) = [c for c in run.checks if c["id"] == "sep-2575-server-rejects-undeclared-capability"]
    assert unknown["details"]["response"]["error"]["code"] == -32602  # the unknown tool: a JSON-RPC error


def test_missing_capability_is_32021_with_http_400(tmp_path: Path) -> None:
    """What the fixture's ``test_missing_capability`` stands for, with rootbound's own tool: served without DIRs,
    a 2026-07-28 call from a client that declares no roots is refused ``-32021`` with HTTP 400, naming the missing
    capability as a ``ClientCapabilities`` object, and no log notification goes out without a ``logLevel``."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "read_file", "arguments": {"path": "x"}, "_meta": meta},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "read_file",
    }
    with http_serve([]) as url, httpx2.Client(timeout=30) as http:
        response = http.post(url, json=body, headers=headers)
    frames = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
    if not frames:
        frames = [response.json()]
    assert response.status_code == 400
    assert [frame.get("method") for frame in frames if "method" in frame] == []  # no log, no independent request
    (answer,) = frames
    assert answer["id"] == 7 and answer["error"]["code"] == -32021
    assert answer["error"]["data"]["requiredCapabilities"] == {"roots": {}}
    assert "rootbound serve DIR" in answer["error"]["message"]
