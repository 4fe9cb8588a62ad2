#!/usr/bin/env bash
# The MCP schema converters of agent frameworks (tests/judges/converters), one venv per mcp SDK major, each pinned by a
# pip freeze: .deps/converters-mcp1 (tests/judges/converters/requirements/mcp1.txt: semantic-kernel, autogen-ext,
# langchain-mcp-adapters, google-genai 3.x on mcp 1.x) and .deps/converters-mcp2 (requirements/mcp2.txt: dspy,
# google-genai 2.x, google-adk, openai-agents, pydantic-ai on mcp 2.x). They never import rootbound: the test feeds them
# the tools/list answer of this checkout's `rootbound serve` as JSON. Idempotent: a stamp (.installed: the hash of the
# pins and the Python version) makes a second run a no-op. Called by scripts/setup-test-deps.sh; runs on its own too.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DEPS="$ROOT/.deps"
mkdir -p "$DEPS"

log() { printf 'setup-converters: %s\n' "$*" >&2; }

# shellcheck source=scripts/pinned-deps.sh
source "$ROOT/scripts/pinned-deps.sh"

converter_venv() {
    pinned_venv "the mcp $1.x converters" "$ROOT/tests/judges/converters/requirements/mcp$1.txt" \
        "$DEPS/converters-mcp$1" bin/python
}

converter_venv 1 &
one=$!
converter_venv 2 &
two=$!
wait "$one"
wait "$two"
