# The single entry point for local runs and CI. `make help` lists the targets.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
# Every install step resolves against the same pins, so no step breaks what another installed.
CONSTRAINTS := requirements/constraints.txt
# Two stamps: the demo's light install (the extension's runtime, torch, moto's S3 server), and
# on top of it everything the tests, lint and docs need (`make install`).
DEMO_STAMP := $(VENV)/.demo-installed
STAMP := $(VENV)/.installed
# Release tools (maturin, ziglang, auditwheel) live apart from the dev venv: see requirements/release.txt.
RELEASE_VENV := build/release-venv
RELEASE_STAMP := $(RELEASE_VENV)/.installed

.PHONY: help install build-demo build-dev build-prod lint format test test-full test-rust test-py demo bench stubtest clean wheels release-check release-ci docs fuzz fuzz-smoke fuzz-tools

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# The venv does not see the system site-packages: what is installed there (an awscli that
# pins botocore, say) would clash with the pins here. An existing .venv is kept as it is.
$(DEMO_STAMP): pyproject.toml requirements/demo.txt $(CONSTRAINTS)
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements/demo.txt -c $(CONSTRAINTS)
	touch $(DEMO_STAMP)

$(STAMP): $(DEMO_STAMP) requirements/test.txt requirements/test-gcs.txt
	# Spark (tests/engines) needs a Java 17 runtime; CI runs as root on Debian.
	command -v java >/dev/null || (apt-get update -q && apt-get install -y -q openjdk-17-jre-headless)
	$(PIP) install -q -r requirements/test.txt -r requirements/test-gcs.txt -c $(CONSTRAINTS)
	# The simulator's web UI test drives Debian's headless Chromium (CI runs as root).
	command -v chromedriver >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; }
	# The remote-read tests and benches start Debian's nginx (not on PATH for non-root shells);
	# its echo module holds requests back to stand in for a link's latency.
	{ command -v nginx >/dev/null || test -x /usr/sbin/nginx; } && test -e /usr/lib/nginx/modules/ngx_http_echo_module.so || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx libnginx-mod-http-echo; }
	touch $(STAMP)

install: $(STAMP) ## create .venv with build, test and lint dependencies

# maturin installs the extension's own dependencies with pip: under the same pins.
MATURIN_DEVELOP := PIP_CONSTRAINT=$(CURDIR)/$(CONSTRAINTS) $(BIN)/maturin develop --release -q

build-demo: $(DEMO_STAMP) ## build the extension into the demo's light .venv
	$(MATURIN_DEVELOP)

build-dev: install ## build the extension into .venv (release profile: tests and demo time it)
	$(MATURIN_DEVELOP)

build-prod: install ## build a wheel into dist/
	$(BIN)/maturin build --release -o dist

format: install ## format Rust and Python
	cargo fmt --all
	$(BIN)/python -m ruff format python tests benches scripts
	$(BIN)/python -m ruff check --fix python tests benches scripts

lint: build-dev ## rustfmt, clippy -D warnings, ruff, mypy (package and tests), stubtest
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(BIN)/python -m ruff format --check python tests benches scripts
	$(BIN)/python -m ruff check python tests benches scripts
	$(BIN)/python -m mypy
	$(BIN)/python scripts/mypy_tests.py
	$(BIN)/python -m mypy.stubtest streamx._core --ignore-missing-stub
	$(BIN)/lint-imports --no-cache
	$(BIN)/python scripts/rust_module_cycles.py rust/streamx-core/src rust/streamx-py/src

# The core alone: the bindings crate holds no tests, and building its test harness compiled
# pyo3, numpy and the bindings once more (clippy already checks them).
test-rust: ## cargo test of the core
	cargo test -p streamx-core --release

# Test files run side by side (pytest-xdist), one file to a process so that a file's
# servers start once: most tests wait on servers, subprocesses and sockets more than they
# compute. The slowest tests are listed at the end (CI's whole run has a 30-minute budget).
PYTEST_PARALLEL := -n auto --maxprocesses=4 --dist loadfile

test-py: build-dev ## pytest (fast selection)
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) --durations=30

docs: build-dev ## build the documentation site into build/site (warnings are errors)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict -q

test: lint docs test-rust test-py release-ci ## everything CI runs: lint, docs, cargo test, pytest, the x86_64 release check

test-full: build-dev fuzz-smoke ## also the slow sweeps, and every fuzz target briefly
	cargo test --workspace --release -- --include-ignored
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) -m 'not release'

# cargo-fuzz needs libFuzzer's instrumentation flags: nightly when rustup has it, else stable
# with RUSTC_BOOTSTRAP=1 and no sanitizer. See FUZZING.md.
FUZZ_TARGETS ?= shard index decompress ndarray columns ledger
FUZZ_SECONDS ?= 600
FUZZ_ARGS ?=
FUZZ_CARGO := $(shell rustup toolchain list 2>/dev/null | grep -q '^nightly' \
	&& echo 'cargo +nightly fuzz' || echo 'RUSTC_BOOTSTRAP=1 cargo fuzz')
FUZZ_FLAGS := $(shell rustup toolchain list 2>/dev/null | grep -q '^nightly' || echo '-s none')

fuzz-tools:
	@command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

fuzz-smoke: fuzz-tools ## run every fuzz target for 10 s on its seed corpus
	cd fuzz && scratch=$$(mktemp -d) && trap 'rm -rf "$$scratch"' EXIT && \
		for t in $(FUZZ_TARGETS); do mkdir "$$scratch/$$t" && \
		$(FUZZ_CARGO) run $(FUZZ_FLAGS) -O $$t "$$scratch/$$t" corpus/$$t -- -max_total_time=10 \
			-rss_limit_mb=2048 || exit 1; done

fuzz: fuzz-tools ## fuzz every target for FUZZ_SECONDS each (corpus grows under fuzz/corpus)
	cd fuzz && for t in $(FUZZ_TARGETS); do \
		$(FUZZ_CARGO) run $(FUZZ_FLAGS) -O $$t corpus/$$t -- -max_total_time=$(FUZZ_SECONDS) \
			-rss_limit_mb=2048 -print_final_stats=1 $(FUZZ_ARGS) || exit 1; done

demo: build-demo ## the main job: write a dataset, stream it through a DataLoader (light install)
	$(BIN)/python -m streamx.demo

bench: build-dev ## streamx vs mosaicml-streaming, same run
	$(PIP) install -q -r requirements/bench.txt -c $(CONSTRAINTS)
	# wids lives only in webdataset 0.2.x: beside the venv's 1.0.2 (see requirements/bench.txt).
	$(PIP) install -q --no-deps --upgrade --target build/bench-peers/wids webdataset==0.2.111
	$(BIN)/python benches/run_all.py

$(RELEASE_STAMP): requirements/release.txt
	$(PY) -m venv $(RELEASE_VENV)
	$(RELEASE_VENV)/bin/python -m pip install -q --upgrade pip
	$(RELEASE_VENV)/bin/python -m pip install -q -r requirements/release.txt
	touch $(RELEASE_STAMP)

wheels: $(RELEASE_STAMP) ## abi3 manylinux2014 wheels (x86_64, aarch64) and the sdist into dist/
	scripts/release/build-wheels.sh

# The sdist test reuses the dependencies `make build-dev` compiled (see tests/packaging/test_sdist.py).
RELEASE_PYTEST = PATH=$(CURDIR)/$(RELEASE_VENV)/bin:$$PATH STREAMX_DIST=$(CURDIR)/dist \
	STREAMX_SDIST_CARGO_TARGET_DIR=$${CARGO_TARGET_DIR:-$(CURDIR)/target} \
	$(BIN)/python -m pytest tests/packaging -v --durations=0 $(PYTEST_PARALLEL)

release-check: wheels install ## wheels, then tests/packaging: tags, glibc symbols, fresh-venv installs, sdist build, aarch64 under qemu
	$(RELEASE_PYTEST) -m release

# CI's share of the release check: the aarch64 build and its qemu run are the slowest steps.
release-ci: $(RELEASE_STAMP) install ## x86_64 wheel and sdist, then every release check but aarch64's
	ARCHES=x86_64 scripts/release/build-wheels.sh
	$(RELEASE_PYTEST) -m 'release and not aarch64'

clean: ## remove build outputs
	cargo clean
	rm -rf $(VENV) dist $(RELEASE_VENV) build/aarch64-std
