#!/usr/bin/env bash
# The packaging judges (issue 38), idempotently (a no-op when their pins are unchanged):
#   .deps/mcpb        the MCP Bundle CLI, npm @anthropic-ai/mcpb (pinned by tests/packaging/mcpb/package-lock.json):
#                     `make bundle` packs with it, tests/packaging/test_bundle.py validates, packs and unpacks
#   .deps/installers  pipx, uv, build and twine in a venv (pip, pinned by tests/packaging/installers.txt): the wheel
#                     installed as users install it (tests/packaging/test_installers.py), `twine check`
# Called by scripts/setup-test-deps.sh (so `make test` installs them); runs alone too: bash scripts/setup-packaging-deps.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DEPS="$ROOT/.deps"
mkdir -p "$DEPS"

log() { printf 'setup-packaging-deps: %s\n' "$*" >&2; }

mcpb_tree() {
    local src="$ROOT/tests/packaging/mcpb" dst="$DEPS/mcpb" want
    want=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
    if [[ -f "$dst/.installed" && "$(cat "$dst/.installed")" == "$want" && -x "$dst/node_modules/.bin/mcpb" ]]; then
        return 0
    fi
    if ! command -v npm >/dev/null; then
        log "npm is required (Node.js >= 20 with npm) to install the MCP Bundle CLI into .deps/mcpb"
        exit 1
    fi
    log "installing @anthropic-ai/mcpb into .deps/mcpb (pinned by tests/packaging/mcpb/package-lock.json)"
    rm -rf "$dst"
    mkdir -p "$dst"
    cp "$src/package.json" "$src/package-lock.json" "$dst/"
    (cd "$dst" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$want" >"$dst/.installed"
}

installers_venv() {
    local pins="$ROOT/tests/packaging/installers.txt" dst="$DEPS/installers"
    local python=${PYTHON:-python3} want
    want=$( { cat "$pins"; "$python" -V 2>&1; } | sha256sum | cut -d' ' -f1)
    if [[ -f "$dst/.installed" && "$(cat "$dst/.installed")" == "$want" && -x "$dst/bin/uv" && -x "$dst/bin/pipx" ]]; then
        return 0
    fi
    log "installing pipx, uv, build and twine into .deps/installers (pinned by tests/packaging/installers.txt)"
    rm -rf "$dst"
    "$python" -m venv "$dst"
    if ! "$dst/bin/python" -m pip install -q --disable-pip-version-check -r "$pins" >"$dst.log" 2>&1; then
        tail -n 20 "$dst.log" >&2
        log "pip could not install .deps/installers (the whole log: .deps/installers.log)"
        exit 1
    fi
    echo "$want" >"$dst/.installed"
}

mcpb_tree
installers_venv
