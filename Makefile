# The two commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
RUNTIME := $(VENV)/.runtime

.PHONY: demo test lint typecheck pytest check-mcp1 test-deps install clean wheel bundle

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The demo needs only the runtime dependencies (mcp): a fresh machine gets to the session sooner.
$(RUNTIME): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -qq --disable-pip-version-check -e .
	touch $(RUNTIME)

install: $(STAMP)

demo: $(RUNTIME)
	$(BIN)/python -m rootbound.demo

PY_DIRS := $(wildcard src tests bench examples scripts packaging)

lint: $(STAMP)
	$(BIN)/ruff check $(PY_DIRS)
	$(BIN)/ruff format --check $(PY_DIRS)

typecheck: $(STAMP)
	$(BIN)/mypy

# The library on mcp 1.x (issue 28): the adapter modules type-checked against 1.x (MCP_V2 always false), then the
# tests that run on both majors plus the 1.x-only ones, in .deps/mcp1 (scripts/setup-test-deps.sh installs it).
MCP1      := .deps/mcp1/bin/python
MCP1_TYPED := src/rootbound/mcp/_sdk_major.py src/rootbound/mcp/server.py src/rootbound/mcp/_sdk1_server.py \
	src/rootbound/mcp/_handshake.py src/rootbound/mcp/_handshake_port.py src/rootbound/mcp/_bridges.py \
	src/rootbound/mcp/client.py src/rootbound/mcp/_sdk1_client.py src/rootbound/mcp/_roots_owner.py \
	examples/v1_fastmcp_server.py examples/v1_client_session.py tests/mcp/v1 tests/mcp/both \
	tests/seeds/conftest.py tests/seeds/v1_snodo_server.py tests/seeds/v1_cpp_server.py tests/seeds/dedalus_server.py \
	tests/seeds/test_snodo.py tests/seeds/test_dedalus.py tests/seeds/test_mcp_cpp_sdk.py \
	tests/reliability/test_server_adapter_both.py tests/reliability/test_stateful.py tests/helpers/raw_peer.py
MCP1_TESTS := tests/mcp/both tests/mcp/v1 tests/seeds tests/reliability/test_server_adapter_both.py \
	tests/reliability/test_stateful.py

check-mcp1: $(STAMP) test-deps
	$(BIN)/mypy --config-file tests/mcp/v1/mypy.ini --python-executable $(MCP1) $(MCP1_TYPED)
	$(MCP1) -m pytest -p no:cacheprovider $(MCP1_TESTS)

# npm packages (conformance runner, TypeScript SDK) into .deps/ and nginx via apt: idempotent, seconds when present.
test-deps:
	bash scripts/setup-test-deps.sh

pytest: $(STAMP) test-deps
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The main suite (mcp 2.x) and the mcp 1.x checks side by side: the main suite leaves most of a second core idle
# (it waits on subprocesses and sockets), so the 1.x run costs little wall time. Their output interleaves for the
# 1.x run's first minutes (no -O: that would hold back the main suite's progress until it ends); each ends with
# its own summary line.
test: lint typecheck
	$(MAKE) --no-print-directory -j2 pytest check-mcp1

# The wheel users install (pipx install dist/rootbound-*.whl, uvx --from ...), and the MCP Bundle built from it
# (dist/rootbound-VERSION.mcpb, Claude Desktop's one-click format; scripts/build_bundle.py says what it carries).
DIST := dist

# The wheel needs pip alone (it builds in an isolated environment): not the dev toolchain. The bundle adds the mcpb
# CLI and uv (scripts/setup-packaging-deps.sh --bundle), not the installers the packaging tests use.
wheel: $(BIN)/python
	rm -f $(DIST)/rootbound-*.whl
	$(BIN)/python -m pip wheel --no-deps --quiet --disable-pip-version-check -w $(DIST) .

bundle: wheel
	bash scripts/setup-packaging-deps.sh --bundle
	$(BIN)/python scripts/build_bundle.py $(DIST)/rootbound-*.whl $(DIST) --uv .deps/bundle-tools/bin/uv

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
