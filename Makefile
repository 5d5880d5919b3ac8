# aqmlab: `make setup` once, then `make test` / `make run`.
# All Python runs in .venv (Debian's /usr/bin/python3, because Mininet only
# imports there); the commands are also linked into /usr/local/bin.
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)
VENV ?= .venv
PY := $(abspath $(VENV))/bin/python
# P4 compiler for `make build`, the PTF suite and the lab: softswitch-p4c, p4c-bm2-ss or p4c
# (redctl/compiler.py; e.g. `make build P4C=p4c-bm2-ss`).
P4C ?= softswitch-p4c
export P4C
PROGRAMS := $(wildcard p4src/*.p4)
TARGET ?= softswitch
# PTF suite's program: v1model (p4src/red_ecn.p4) or tna (hw/tofino/red_ecn.p4, built-in target only)
ARCH ?= v1model
BINDIR ?= /usr/local/bin
CLIS := softswitch-p4c softswitch softswitch-stf redctl aqmlab

.PHONY: setup apt venv engine build test unit ptf ptf-tna run bench clean fpga-test fpga-synth

setup: apt venv engine build

apt:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends \
	    $$(cat requirements-apt.txt | grep -v '^#') >/dev/null; \
	else echo "apt: not root, assuming requirements-apt.txt is installed"; fi

venv:
	[ -x $(PY) ] || /usr/bin/python3 -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q -e . --no-deps
	# finsy needs protobuf >= 4, p4runtime-shell < 3.21: finsy gets its own venv (server interop test)
	[ -x .venv-finsy/bin/python ] || /usr/bin/python3 -m venv .venv-finsy
	.venv-finsy/bin/python -m pip install -q "finsy==0.30.0"
	@if [ -w $(BINDIR) ]; then for c in $(CLIS); do ln -sf $(abspath $(VENV))/bin/$$c $(BINDIR)/$$c; done; fi

engine:
	@[ -f softswitch/engine/Cargo.toml ] || { echo "engine: no crate yet"; exit 0; }; \
	cd softswitch/engine && $(PY) -m maturin build --release -q -o $(abspath build/wheels) --interpreter $(PY)
	@if ls build/wheels/softswitch_engine-*.whl >/dev/null 2>&1; then \
	  $(PY) -m pip install -q --force-reinstall --no-deps build/wheels/softswitch_engine-*.whl; fi

build: $(PROGRAMS)
	@$(PY) -m redctl.compiler $(PROGRAMS) -o build

# `make test` = the PTF suite on the built-in target (v1model and TNA programs) + all
# unit/integration tests.
test: ptf ptf-tna unit

unit:
	$(PY) -m pytest -q --durations=25

ptf:
	$(MAKE) -C ptf-tests run TARGET=$(TARGET) ARCH=$(ARCH) PY=$(PY)

# the same suite against hw/tofino/red_ecn.p4 on the built-in target (TNA profile's expectations)
ptf-tna:
	$(MAKE) -C ptf-tests suite ARCH=tna PY=$(PY)

# hw/fpga: the RED/ECN RTL against the reference model (also part of `make unit`),
# and its synthesis/place-and-route (writes hw/fpga/synth/RESULTS.md; CPU-heavy).
fpga-test:
	$(PY) -m pytest -q hw/fpga/tests

fpga-synth:
	$(MAKE) -C hw/fpga synth PY=$(PY)

# `make run`: ECN vs non-ECN and RED vs drop-tail, 5 repetitions, two runs side by side
# (10 Mb/s: within the --jobs rule of mininet/README.md), ~2.5 min, with 95 % intervals.
run:
	$(PY) -m aqmlab run mininet/experiments/default.toml --jobs 2

# Benchmarks live next to what they measure and write committed results files.
# front-end compile time, P4Runtime write/read rates, switch speed and link
# fidelity, and the lab's end-to-end TCP fidelity.
bench:
	$(PY) -m softswitch_p4c.bench
	$(PY) -m softswitch_server.bench
	$(PY) softswitch/bench/run.py
	$(PY) softswitch/bench/lean.py
	$(PY) mininet/bench/run.py

clean:
	rm -rf build/*.json build/*.txtpb build/wheels softswitch/engine/target
