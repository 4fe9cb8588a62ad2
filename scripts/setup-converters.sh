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

converter_venv() {
    local major=$1
    local pins="$ROOT/tests/judges/converters/requirements/mcp$major.txt" dst="$DEPS/converters-mcp$major"
    local python=${PYTHON:-python3} want
    want=$( { cat "$pins"; "$python" -V 2>&1; } | sha256sum | cut -d' ' -f1)
    if [[ -f "$dst/.installed" && "$(cat "$dst/.installed")" == "$want" && -x "$dst/bin/python" ]]; then
        return 0
    fi
    log "installing the mcp $major.x converters into .deps/converters-mcp$major (pinned by tests/judges/converters/requirements/mcp$major.txt)"
    rm -rf "$dst"
    "$python" -m venv "$dst"
    if ! "$dst/bin/python" -m pip install -q --disable-pip-version-check -r "$pins" >"$dst.log" 2>&1; then
        tail -n 20 "$dst.log" >&2
        log "pip could not install .deps/converters-mcp$major (the whole log: .deps/converters-mcp$major.log)"
        exit 1
    fi
    echo "$want" >"$dst/.installed"
}

converter_venv 1 &
one=$!
converter_venv 2 &
two=$!
wait "$one"
wait "$two"
