#!/usr/bin/env bash
# The packaging judges (issue 38), idempotently (a no-op when their pins are unchanged):
#   .deps/mcpb        the MCP Bundle CLI, npm @anthropic-ai/mcpb (pinned by tests/packaging/mcpb/package-lock.json):
#                     `make bundle` packs with it, tests/packaging/test_bundle.py validates, packs and unpacks
#   .deps/installers  pipx, uv, build and twine in a venv (pip, pinned by tests/packaging/installers.txt): the wheel
#                     installed as users install it (tests/packaging/test_installers.py), `twine check`
#   .deps/bundle-tools  with --bundle (what `make bundle` runs): uv alone (tests/packaging/bundle-tools.txt), and
#                     the mcpb CLI, not the installers above
# Called by scripts/setup-test-deps.sh (so `make test` installs them); runs alone too: bash scripts/setup-packaging-deps.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DEPS="$ROOT/.deps"
mkdir -p "$DEPS"

log() { printf 'setup-packaging-deps: %s\n' "$*" >&2; }

# shellcheck source=scripts/pinned-deps.sh
source "$ROOT/scripts/pinned-deps.sh"

pinned_npm "the MCP Bundle CLI (@anthropic-ai/mcpb)" "$ROOT/tests/packaging/mcpb" "$DEPS/mcpb" node_modules/.bin/mcpb
if [[ "${1:-}" == "--bundle" ]]; then  # `make bundle`: the mcpb CLI and uv, nothing the tests alone use
    pinned_venv "uv" "$ROOT/tests/packaging/bundle-tools.txt" "$DEPS/bundle-tools" bin/uv
    exit 0
fi
pinned_venv "pipx, uv, build and twine" "$ROOT/tests/packaging/installers.txt" "$DEPS/installers" bin/pipx
