#!/usr/bin/env bash
# Installs what the independent-judge tests need, idempotently (seconds when already installed):
#   .deps/conformance  the official MCP conformance runner + Node 22 (npm, pinned by tests/judges/conformance/package-lock.json)
#   .deps/interop      the TypeScript SDK v2 client/server/node packages (npm, pinned by tests/judges/interop/package-lock.json)
#   .deps/inspector    the MCP Inspector (its --cli mode) + Node 22 (npm, pinned by tests/judges/inspector/package-lock.json)
#   .deps/inspector-0.15  the MCP Inspector 0.15, whose CLI sends every --tool-arg as a string (npm, pinned by
#                      tests/judges/inspector-0.15/package-lock.json; it runs on the system's Node >= 20)
#   .deps/peers        real MCP filesystem servers, several versions side by side via npm aliases (tests/audit, bench/peers.py;
#                      pinned by tests/judges/peers/package-lock.json)
#   .deps/canary-readers, .deps/canary-readers-npm
#                      the libraries published servers open the audit's typed canaries with: openpyxl and nbformat
#                      (pip, pinned by tests/audit/canary-readers/requirements.txt) and excelize inside the Go server
#                      @negokaz/excel-mcp-server (npm, pinned by tests/audit/canary-readers/package-lock.json)
#   .deps/git-servers  mcp-server-git releases (PyPI, a venv each; tests/audit, pinned by tests/audit/git-servers/*.txt)
#   .deps/frameworks   agent frameworks, one venv each (pip, pinned by tests/judges/frameworks/requirements/*.txt):
#                      pydantic-ai, fastmcp, openai-agents, langchain-mcp-adapters, mcp-use, smolagents (tests/judges/frameworks)
#   .deps/converters-mcp1, .deps/converters-mcp2
#                      agent frameworks' MCP schema converters, one venv per mcp major (scripts/setup-converters.sh;
#                      pinned by tests/judges/converters/requirements/mcp*.txt)
#   .deps/mcp1         the latest mcp 1.x with this checkout (-e .), for the tests that run on both SDK majors (pinned by
#                      tests/mcp/v1/requirements.txt; `make pytest-mcp1`)
#   ripgrep            Debian package, the judge of the ignore-aware walk (tests/judges/test_ripgrep_ignore.py)
#   nginx              Debian package, for the multi-instance test (tests/judges/test_deploy_nginx.py starts its own
#                      instance on loopback with its own config, pid and log paths; the system service is never
#                      started)
# Called by `make pytest` (so `make test` and CI on a fresh clone install everything); `make demo` never runs it.
# Needs npm and, for nginx and ripgrep, root (apt-get). Set ROOTBOUND_SKIP_APT=1 to leave apt alone.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DEPS="$ROOT/.deps"
mkdir -p "$DEPS"

log() { printf 'setup-test-deps: %s\n' "$*" >&2; }

# shellcheck source=scripts/pinned-deps.sh
source "$ROOT/scripts/pinned-deps.sh"

# npm_tree NAME: `npm ci` tests/judges/NAME/package{,-lock}.json into .deps/NAME unless the lockfile is unchanged.
npm_tree() {
    pinned_npm "npm packages for $1" "$ROOT/tests/judges/$1" "$DEPS/$1" node_modules
}

npm_tree conformance
npm_tree interop
npm_tree peers
npm_tree inspector
npm_tree inspector-0.15
# Node resolves ES module imports from the script's own folder: point tests/judges/interop/node_modules (git-ignored) at
# the installed tree, unless someone installed there directly.
if [[ ! -e "$ROOT/tests/judges/interop/node_modules" || -L "$ROOT/tests/judges/interop/node_modules" ]]; then
    ln -sfn ../../../.deps/interop/node_modules "$ROOT/tests/judges/interop/node_modules"
fi

# rootbound audit's repository servers (tests/audit/test_peers.py, bench/audit_corpus.py): mcp-server-git releases from
# PyPI, one venv each under .deps/git-servers/NAME, pinned by tests/audit/git-servers/NAME.txt.
for pins in "$ROOT"/tests/audit/git-servers/*.txt; do
    name=$(basename "$pins" .txt)
    dst="$DEPS/git-servers/$name"
    want=$(sha256sum "$pins" | cut -d' ' -f1)
    if [[ -f "$dst/.installed" && "$(cat "$dst/.installed")" == "$want" ]]; then
        continue
    fi
    log "installing $name (PyPI, pinned by tests/audit/git-servers/$name.txt)"
    rm -rf "$dst"
    python3 -m venv "$dst"
    "$dst/bin/python" -m pip install --quiet --disable-pip-version-check -r "$pins"
    echo "$want" >"$dst/.installed"
done

# The audit's typed canaries opened by real servers' libraries (tests/audit/test_canary_readers.py).
pinned_venv "openpyxl and nbformat" "$ROOT/tests/audit/canary-readers/requirements.txt" "$DEPS/canary-readers" bin/python
pinned_npm "excelize (@negokaz/excel-mcp-server)" "$ROOT/tests/audit/canary-readers" "$DEPS/canary-readers-npm" \
    node_modules/negokaz-excel/dist/launcher.js

# The runner needs Node >= 22 (fs.globSync), the Inspector Node >= 22.19; the npm `node` package brings it beside each.
for tree in conformance inspector; do
    if ! "$DEPS/$tree/node_modules/.bin/node" -e 'process.exit(+(process.versions.node.split(".")[0] < 22))'; then
        log "the node@22 package did not install a working Node 22 in .deps/$tree"
        exit 1
    fi
done

if [[ "${ROOTBOUND_SKIP_APT:-}" != 1 ]] && ! command -v nginx >/dev/null && [[ ! -x /usr/sbin/nginx ]]; then
    if [[ $(id -u) -ne 0 ]]; then
        log "nginx is missing and this is not root: install the Debian package nginx (tests/judges/test_deploy_nginx.py needs it)"
        exit 1
    fi
    log "installing nginx (Debian package)"
    # Keep apt from starting the system nginx on port 80: the test runs its own instance on loopback.
    made_policy=0
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        made_policy=1
    fi
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-cache show nginx >/dev/null 2>&1; then
        apt-get update -qq >/dev/null
    fi
    if ! apt-get install -y -qq --no-install-recommends nginx >/dev/null; then
        apt-get update -qq >/dev/null
        apt-get install -y -qq --no-install-recommends nginx >/dev/null
    fi
    if [[ $made_policy == 1 ]]; then
        rm -f /usr/sbin/policy-rc.d
    fi
fi

# ripgrep judges the ignore-aware walk (tests/judges/test_ripgrep_ignore.py: .gitignore, .ignore, .rgignore, info/exclude).
if [[ "${ROOTBOUND_SKIP_APT:-}" != 1 ]] && ! command -v rg >/dev/null; then
    if [[ $(id -u) -ne 0 ]]; then
        log "ripgrep is missing and this is not root: install the Debian package ripgrep (tests/judges/test_ripgrep_ignore.py needs it)"
        exit 1
    fi
    log "installing ripgrep (Debian package)"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -qq --no-install-recommends ripgrep >/dev/null; then
        apt-get update -qq >/dev/null
        apt-get install -y -qq --no-install-recommends ripgrep >/dev/null
    fi
fi

# --- agent frameworks (tests/judges/frameworks): one venv each under .deps/frameworks/NAME, every package pinned by
# tests/judges/frameworks/requirements/NAME.txt (a pip freeze). Those on mcp 2 (flag 1) see this checkout's src/
# through a .pth file (the drivers import rootbound.mcp). Those pinned to mcp<2 (flag pip: langchain-mcp-adapters,
# mcp-use) get this checkout installed by pip, editable, WITH dependency resolution, so pip proves rootbound's own
# requirement admits their mcp 1.x (issue 28: `pip install langchain-mcp-adapters==0.3.2 rootbound` resolves); their
# pins carry rootbound's runtime deps so nothing floats. Those whose driver never imports rootbound (flag 0:
# smolagents, on mcp 1.x through mcpadapt) get neither. Every driver runs `rootbound serve` from .venv as a
# subprocess. A stamp (.installed: the hash of the pins, the flag, pyproject.toml and the Python version) makes a
# second run a no-op.
framework_venv() {
    local name=$1 with_rootbound=$2
    local pins="$ROOT/tests/judges/frameworks/requirements/$name.txt" dst="$DEPS/frameworks/$name"
    local python=${PYTHON:-python3} want site
    local -a editable=()
    [[ $with_rootbound == pip ]] && editable=(-e "$ROOT")
    want=$( { cat "$pins"; echo "rootbound=$with_rootbound $ROOT"; [[ $with_rootbound == pip ]] && cat "$ROOT/pyproject.toml"; "$python" -V 2>&1; } | sha256sum | cut -d' ' -f1)
    if [[ -f "$dst/.installed" && "$(cat "$dst/.installed")" == "$want" && -x "$dst/bin/python" ]]; then
        return 0
    fi
    log "installing $name into .deps/frameworks/$name (pinned by tests/judges/frameworks/requirements/$name.txt)"
    rm -rf "$dst"
    "$python" -m venv "$dst"
    if ! "$dst/bin/python" -m pip install -q --disable-pip-version-check -r "$pins" ${editable[@]+"${editable[@]}"} >"$dst.log" 2>&1; then
        tail -n 20 "$dst.log" >&2
        log "pip could not install $name (the whole log: .deps/frameworks/$name.log)"
        exit 1
    fi
    if [[ $with_rootbound == 1 ]]; then
        site=$("$dst/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
        echo "$ROOT/src" >"$site/rootbound-checkout.pth"
    fi
    echo "$want" >"$dst/.installed"
}

# Side by side: a cold install is mostly waiting on downloads and unpacking (see docs/interop.md for timings).
framework_pids=()
for framework in "pydantic-ai 1" "fastmcp 1" "openai-agents 1" "langchain-mcp-adapters pip" "mcp-use pip" \
    "smolagents 0"; do
    # shellcheck disable=SC2086  # two words: the name and the flag
    framework_venv $framework &
    framework_pids+=($!)
done
# --- the library on mcp 1.x (issue 28): .deps/mcp1, the pins plus this checkout, editable, so pip resolves
# rootbound's own requirement against mcp 1.x (a requirement that excluded 1.x fails here). Beside the frameworks.
mcp1_venv() {
    local pins="$ROOT/tests/mcp/v1/requirements.txt" dst="$DEPS/mcp1"
    local python=${PYTHON:-python3} want
    want=$( { cat "$pins" "$ROOT/pyproject.toml"; echo "$ROOT"; "$python" -V 2>&1; } | sha256sum | cut -d' ' -f1)
    if [[ -f "$dst/.installed" && "$(cat "$dst/.installed")" == "$want" && -x "$dst/bin/python" ]]; then
        return 0
    fi
    log "installing mcp 1.x and this checkout into .deps/mcp1 (pinned by tests/mcp/v1/requirements.txt)"
    rm -rf "$dst"
    "$python" -m venv "$dst"
    if ! "$dst/bin/python" -m pip install -q --disable-pip-version-check -r "$pins" -e "$ROOT" >"$dst.log" 2>&1; then
        tail -n 20 "$dst.log" >&2
        log "pip could not install .deps/mcp1 (the whole log: .deps/mcp1.log)"
        exit 1
    fi
    echo "$want" >"$dst/.installed"
}
mcp1_venv &
framework_pids+=($!)
"$ROOT/scripts/setup-converters.sh" &
framework_pids+=($!)

for pid in "${framework_pids[@]}"; do
    wait "$pid" || exit 1
done

# --- packaging judges (issue 38): .deps/mcpb (the MCP Bundle CLI, npm) and .deps/installers (pipx, uv, build, twine),
# in a script of their own so they can be installed and tested alone.
bash "$ROOT/scripts/setup-packaging-deps.sh"
