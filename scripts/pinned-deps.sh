# Sourced by the setup scripts: the two ways a pinned test dependency is installed into .deps, idempotently.
# Each writes a stamp (.installed: the hash of its pins and of what else decides the install) and is a no-op while
# the stamp matches. The caller defines log() and sets DEPS.

# pinned_venv LABEL PINS DST CHECK [PIP ARGS...]: a venv at DST with `pip install -r PINS` (plus PIP ARGS); CHECK is a
# file that must exist in it afterwards. The stamp covers the pins, the Python version, PIP ARGS and DST.
pinned_venv() {
    local label=$1 pins=$2 dst=$3 check=$4
    shift 4
    local python=${PYTHON:-python3} want
    # The venv's own path too: a venv is not relocatable (its scripts name its python), so one made through another
    # path to the same folder (a symlinked .deps) must be made again here.
    want=$( { cat "$pins"; "$python" -V 2>&1; if (($#)); then printf '%s\n' "$@"; fi; echo "$dst"; } | sha256sum | cut -d' ' -f1)
    if [[ -f "$dst/.installed" && "$(cat "$dst/.installed")" == "$want" && -e "$dst/$check" ]]; then
        return 0
    fi
    log "installing $label into ${dst#"$ROOT"/} (pinned by ${pins#"$ROOT"/})"
    rm -rf "$dst"
    "$python" -m venv "$dst"
    if ! "$dst/bin/python" -m pip install -q --disable-pip-version-check -r "$pins" "$@" >"$dst.log" 2>&1; then
        tail -n 20 "$dst.log" >&2
        log "pip could not install ${dst#"$ROOT"/} (the whole log: ${dst#"$ROOT"/}.log)"
        exit 1
    fi
    echo "$want" >"$dst/.installed"
}

# pinned_npm LABEL SRC DST CHECK: `npm ci` of SRC's package.json and package-lock.json into DST; CHECK must exist.
pinned_npm() {
    local label=$1 src=$2 dst=$3 check=$4 want
    want=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
    if [[ -f "$dst/.installed" && "$(cat "$dst/.installed")" == "$want" && -e "$dst/$check" ]]; then
        return 0
    fi
    if ! command -v npm >/dev/null; then
        log "npm is required (Node.js >= 20 with npm) to install $label into ${dst#"$ROOT"/}"
        exit 1
    fi
    log "installing $label into ${dst#"$ROOT"/} (pinned by ${src#"$ROOT"/}/package-lock.json)"
    rm -rf "$dst"
    mkdir -p "$dst"
    cp "$src/package.json" "$src/package-lock.json" "$dst/"
    (cd "$dst" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$want" >"$dst/.installed"
}
