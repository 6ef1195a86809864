# Fuxi-TS. Quick start: `make demo`, `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help
NPM ?= npm

.PHONY: help install build native cc openssl format lint check-gen unit integration test-faults test-rack partition-matrix-unaware test-history rack-tools test demo etcd chromium clean bench-failover bench-failover-rack bench-sched bench-paper bench-detectors bench-throughput bench-cli bench-am-host bench-workdir-sweep bench-partitions bench-stragglers dist bench-prediction

help:
	@echo "make demo   - start a local cluster (1 master + 3 agents), run the word-count job, print the result"
	@echo "make test   - install what the tests need, build, lint, run unit and integration tests"
	@echo "make build  - compile every package (tsc -b) and bundle the fuxi CLI"

# npm packages, installed exactly as locked; re-run when the lock file changes.
node_modules/.install-stamp: package.json package-lock.json
	$(NPM) ci --no-audit --no-fund
	@touch $@

install: node_modules/.install-stamp

# tsc, then the one-file `fuxi` CLI and its code cache (scripts/bundle.mjs).
build: install
	npx tsc -b
	node scripts/bundle.mjs
	@$(MAKE) --no-print-directory native

# The agent's fuxi-forker (agent/native/fuxi-forker.c; agent/src/shell/forker.ts), built when a C
# compiler is there. Without it the agent's spawn helper forks the workers itself (about 1.4 ms more
# CPU per worker). `make cc` installs Debian's gcc; `make test` does.
native:
	@if command -v cc >/dev/null 2>&1; then \
	  mkdir -p agent/dist/native; \
	  if [ ! agent/dist/native/fuxi-forker -nt agent/native/fuxi-forker.c ]; then \
	    cc -O2 -Wall -Wextra -Werror -std=gnu99 -o agent/dist/native/fuxi-forker agent/native/fuxi-forker.c; \
	  fi; \
	else \
	  echo "no C compiler (cc): agent/dist/native/fuxi-forker not built; the spawn helper forks workers itself"; \
	fi

# Debian's gcc, for fuxi-forker (make native).
cc:
	@if ! command -v cc >/dev/null 2>&1; then \
	  echo "installing gcc (Debian)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq gcc libc6-dev >/dev/null; \
	fi

# The release tarball dist/fuxi-<version>-linux.tar.gz (scripts/dist.mjs): every runtime package's
# compiled code, production node_modules (npm ci --omit=dev), bin/ wrappers that run the host's
# Node.js 20.19+, the systemd units, example configs and install.sh. README: "Run it on several machines".
# The integration suite (test/src/integration/dist.test.ts) builds one into a temp dir, runs it from
# there and verifies the units it installs with systemd-analyze.
dist: build
	node scripts/dist.mjs

# Debian's openssl: `fuxi certs`, and so every cluster the demo and the tests start (mutual TLS).
openssl:
	@if ! command -v openssl >/dev/null 2>&1; then \
	  echo "installing openssl (Debian)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq openssl >/dev/null; \
	fi

# Debian's etcd-server, for the suites that run a real etcd.
etcd:
	@if ! command -v etcd >/dev/null 2>&1; then \
	  echo "installing etcd-server (Debian)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq etcd-server >/dev/null; \
	fi
	@etcd --version | head -1

# Debian's chromium, for the dashboard's browser test (test/src/integration/dashboard.test.ts runs it
# headless). apt-get update only when the package is not known yet.
chromium:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  echo "installing chromium (Debian)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  apt-cache show chromium >/dev/null 2>&1 || $$SUDO apt-get update -qq; \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi
	@chromium --version 2>/dev/null | head -1

# Formats every source file with Prettier (.prettierrc.json); `make lint` (part of `make test`)
# fails on a file that is not formatted.
format: install
	npx prettier --write --log-level warn .

check-gen: install
	node proto/scripts/gen-types.mjs --check

lint: build
	npx prettier --check --log-level warn .
	npx eslint .
	npx madge --circular --extensions js proto/dist packages/common/dist packages/rpc/dist packages/store/dist master/dist agent/dist appmaster/dist client/dist deploy/dist

unit: build openssl
	npx mocha --config .mocharc.unit.json

integration: build openssl
	npx mocha --config .mocharc.integration.json

# Every row of the paper's Table 3 (crash = kill -9, timing = SIGSTOP past the detection threshold,
# then SIGCONT; a hosted AM fails alone through its AM host), each alone and combined, and the AM
# host's own crash and pause (rows 14, 15), against real processes and a real etcd; writes
# bench-results/fault-matrix.json. FUXI_FAULT_ROWS=8-13 runs a subset.
test-faults: build openssl etcd
	npx mocha --config .mocharc.faults.json

# The rack: etcd, masters and agents each on a host of its own (network namespaces on a bridge,
# links cut with nftables, slowed with tc tbf), started from deploy/config/cluster/*.yaml: the
# harness's own tests, a job's life across hosts (word count, leader kill -9, agent kill -9 and
# restart), fault-matrix rows 1, 2, 4 and 9, and one minute of the history test (every fault kind
# once). Needs root (CI has it); fails with the reason otherwise.
test-rack: build openssl etcd rack-tools
	npx mocha --config .mocharc.rack.json

# The partition matrix (part of test-rack) once more with connectivity awareness off: masters with
# connectivityAware false, agents not probing. Records each cell under "unaware" in
# bench-results/partition-matrix.json without failing on it (the comparison with today's behaviour).
partition-matrix-unaware: build etcd rack-tools
	FUXI_CONNECTIVITY_AWARE=0 npx mocha --timeout 600000 --forbid-only test/dist/rack/partition-matrix-rack.test.js

# The history test (Jepsen's method) on a rack of its own (prefix fxh, 10.214.0): a three-member
# etcd, three masters and three agents; clients submit (some ids twice), kill, get and list jobs,
# every call recorded with its outcome, while a nemesis injects 100 faults (kill -9 and pause of
# masters, kill and pause of etcd members with quorum kept and lost, master-to-etcd links cut,
# etcd's space quota filled and freed). After healing, a checker looks for lost, duplicated,
# phantom and vanished jobs, regressed states, wrong ends, orphan workers and daemon exits; writes
# bench-results/history.json and fails on any of them (jobs that failed or did not finish are
# reported). About 12 minutes. HISTORY_ARGS passes options (--faults N, --seed N, --clients N, --keep).
test-history: build etcd rack-tools
	node test/dist/history/main.js --faults 100 $(HISTORY_ARGS)

# iproute2 (ip netns, tc) and nftables, for the rack.
rack-tools:
	@if ! command -v nft >/dev/null 2>&1 || ! command -v ip >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1; then \
	  echo "installing iproute2 and nftables (Debian)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq iproute2 nftables >/dev/null; \
	fi

test: install openssl etcd chromium cc check-gen lint unit integration test-faults test-rack

demo: build openssl
	node deploy/dist/demo.js

# Benchmark (not a test): real etcd, 3 masters, 200 simulated nodes, 50 apps; kills the leader 5
# times and writes bench-results/master-failover.json.
bench-failover: build etcd
	node test/dist/bench/master-failover.js

# Benchmark (not a test): master failover on the rack. etcd and each of 3 masters on its own host
# (started from deploy/config/cluster/master.yaml), 1,002 simulated nodes on 3 agent hosts, 2,000
# apps; kills the leader 5 times and writes bench-results/master-failover-rack.json.
# BENCH_FAILOVER_RACK_ARGS passes options (see test/src/bench/master-failover.ts). Masters (and the
# simulated hosts) run with --max-semi-space-size=64, as deploy/systemd/fuxi-master.service runs the master.
bench-failover-rack: build etcd rack-tools
	node test/dist/bench/master-failover.js --rack --hosts 3 --nodes-per-host 334 --apps 2000 --instances 1 --node-args=--max-semi-space-size=64 \
	  --heartbeat-interval-ms 2000 --am-heartbeat-interval-ms 5000 --agent-timing-out-ms 10000 --agent-timeout-ms 60000 \
	  --recovery-deadline-ms 3000 --submit-rate 40 --settle-ms 5000 --no-load --sim-nice 10 $(BENCH_FAILOVER_RACK_ARGS)

# Benchmark (not a test): the real master's scheduler over real gRPC at 1,000 and 5,000 virtual
# nodes: grants/s, request-to-grant latency, heartbeat CPU, memory per node and per running worker;
# and an external scheduler's round trip at 1,000 hosts (externalScheduler; `--only external` runs
# just that case). Writes bench-results/sched.json. BENCH_SCHED_ARGS passes options (e.g. --scales 1000).
bench-sched: build
	node test/dist/bench/sched.js $(BENCH_SCHED_ARGS)

# Benchmark (not a test): cold starts on a local cluster (a master, one agent): the median and p90
# wall time of 20 `fuxi submit` runs of a /bin/true job (cliColdStartMs) and of `fuxi --help`, and
# each job's AM from its start to its registration; writes bench-results/cli.json.
# BENCH_CLI_ARGS passes options (--runs, --cli, --am-command; see test/src/bench/cli.ts).
bench-cli: build
	node test/dist/bench/cli.js $(BENCH_CLI_ARGS)

# Benchmark (not a test): the paper's failover evaluation (Tables 4-8, Figure 10), scaled down:
# real etcd + 3 masters, 300 simulated nodes, the 10/100/1,000-instance job mix, faults injected
# per failover mode (FT, FMFO, AMFO, NoFO). About 20 minutes; writes bench-results/paper-eval.json,
# paper-eval.md and paper-eval-jct-cdf.svg. BENCH_PAPER_ARGS passes options (see --help).
bench-paper: build etcd
	node test/dist/bench/paper-eval.js $(BENCH_PAPER_ARGS)

clean:
	npx tsc -b --clean
	rm -f client/dist/fuxi.* appmaster/dist/fuxi-appmaster.* appmaster/dist/fuxi-amhost.*
	rm -rf agent/dist/native
	rm -rf bench-results dist

# Benchmark (not a test): replays the heartbeat traces in test/data/heartbeats (recorded with the
# master's --record-heartbeats; `node test/dist/bench/record-heartbeats.js` records one on a local
# cluster under load) through every failure detector and a grid of parameters, with injected
# crashes; writes bench-results/detectors.json and detectors.svg.
bench-detectors: build
	node test/dist/bench/detectors.js $(BENCH_DETECTORS_ARGS)

# Benchmark (not a test): what connectivity awareness costs with no partition. The same set of word
# counts on a rack of its own (fxb, 10.216.0; etcd, 3 masters, 4 agent hosts) with probing on and
# off, alternating, 5 rounds each: job completion time ratio, masters' and agents' CPU; and the probe
# traffic of the median and the busiest agent at 1,000 simulated nodes (the master's own target
# choice, then one real prober measured). Writes bench-results/partitions.json.
# BENCH_PARTITIONS_ARGS passes options (--rounds, --jobs, --nodes, --skip-rack; see test/src/bench/partitions.ts).
bench-partitions: build etcd rack-tools
	node test/dist/bench/partitions.js $(BENCH_PARTITIONS_ARGS)

# Benchmark (not a test): speculation off / base / path on the rack, with no fault and with one host's
# link at 1 Mbit/s (tc tbf). Writes bench-results/stragglers.json and stragglers.svg (test/src/bench/stragglers.ts).
bench-stragglers: build etcd rack-tools
	node test/dist/bench/stragglers.js $(BENCH_STRAGGLERS_ARGS)

# Benchmark (not a test): the AM host against dedicated AM processes. CPU and memory per job's AM
# on a local cluster; one core step of a 100,000-instance job; the AM host's main-loop delay and its
# neighbours' job times beside a 100,000-instance job (simulated nodes, one real fuxi-amhost), with
# that job's AM in a thread and on the main loop. Writes bench-results/am-host.json.
bench-am-host: build
	node test/dist/bench/am-host.js $(BENCH_AM_HOST_ARGS)

# Benchmark (not a test): the agent's sweep of finished worker directories over 5,000 and 20,000
# kept ones: an agent's first sweep, a sweep with every app settled, and one that reads every app
# again, and the memory a settled app takes. Writes bench-results/workdir-sweep.json.
bench-workdir-sweep: build
	node --expose-gc test/dist/bench/workdir-sweep.js $(BENCH_WORKDIR_SWEEP_ARGS)

# Benchmark (not a test): many small jobs on a local cluster with 16 slots (separate CLI submits,
# SDK submitMany, a job array, one 1,000-instance job, submit latency, 10,000 jobs through
# submitMany); writes bench-results/throughput.json, then the same but 10,000 jobs with the master
# on etcd (throughput-etcd.json). BENCH_THROUGHPUT_ARGS="--jobs 200" and the like.
bench-throughput: build etcd
	node test/dist/bench/throughput.js --ten-thousand $(BENCH_THROUGHPUT_ARGS)
	node test/dist/bench/throughput.js --store etcd $(BENCH_THROUGHPUT_ARGS)

# Benchmark (not a test): failure prediction off and on, on the node simulator: a real master, 24
# simulated nodes (real agents, simulated workers, real in-process AMs; some nodes fail many
# attempts, some flap, some fail under memory pressure, all hidden from the master) and 150 jobs,
# once with the master's failurePrediction false and once on, for seeds 1, 2 and 3 (off and on back
# to back, alternately first); writes bench-results/prediction.json {off, on, seeds}: failed attempts
# (prediction's early kills included) and jobs, mean JCT, wasted slot-seconds. About 20 minutes.
# BENCH_PREDICTION_ARGS passes options (--seeds 1,2,3, --seed N, --jobs, --nodes, --config '{"reschedulePenalty": 10}').
# `node test/dist/bench/prediction.js` is the model-only discrete-event version (fake clock, 500
# jobs in seconds; writes bench-results/prediction-des.json).
bench-prediction: build
	node test/dist/bench/prediction-sim.js $(BENCH_PREDICTION_ARGS)
