# Lodestream: an Iggy-compatible, VSR-replicated message-streaming server.
GO        ?= go
BIN       := bin
PKGS      := ./...
# Packages that run goroutines get the race detector.
RACE_PKGS ?= ./transport/... ./node/... ./httpapi/... ./client/... ./integration/... ./partitions/... ./metadata/... ./bench/... ./cmd/... ./vfs/...
SEEDS     ?= 50
FUZZTIME  ?= 60s

.PHONY: sim-nodes sim-meta build run test test-unit test-race sim sim-ci powerloss lint bench fuzz clean cluster-up cluster-down cluster-status cluster-idle cluster-align cluster-allkill crash client-failover nemesis soak

build:
	$(GO) build -o $(BIN)/ ./cmd/...

run: build
	IGGY_SYSTEM_PATH=$${IGGY_SYSTEM_PATH:-local_data} ./$(BIN)/iggy-server --with-default-root-credentials

# A local 3-node cluster on loopback (deploy/cluster-3.toml): data and logs
# in local_cluster/. `deploy/cluster.sh kill N` / `start N` for failover.
cluster-up: build
	deploy/cluster.sh up

cluster-down:
	deploy/cluster.sh down

# Measurements on real 3-node loopback clusters (docs/cluster.md), outside
# make test: idle CPU and memory per partition, and how fast partition
# leadership follows the metadata primary.
PARTITIONS ?= 1000
cluster-idle:
	LODESTREAM_IDLE_PARTITIONS=$(PARTITIONS) $(GO) test -count=1 -timeout 30m ./integration/ -run TestClusterIdlePartitionCost -v
cluster-align:
	LODESTREAM_ALIGN_PARTITIONS=$(PARTITIONS) $(GO) test -count=1 -timeout 30m ./integration/ -run TestClusterPartitionLeadershipFollowsMetadata -v

# Every node killed mid-produce, LOOPS loops per durability (make test runs
# 1; docs/cluster.md "Not yet" tells what it found before the prepare WAL).
LOOPS ?= 2
cluster-allkill:
	LODESTREAM_ALLKILL_LOOPS=$(LOOPS) $(GO) test -count=1 -timeout 30m ./integration/ -run TestClusterAllNodesKilledMidProduce -v

cluster-status:
	deploy/cluster.sh status

# The crash matrix (docs/crash-tests.md): SIGKILL of a singleton, a backup,
# the primary and every node of a 3-replica cluster at seeded random moments
# of a produce + consumer-offset stream, torn tails, a simulated power loss
# and a flipped synced byte; LOOPS loops per cell (make test runs 1), totals
# logged. CRASH_SEED=S replays a logged seed.
crash:
	LODESTREAM_CRASH_LOOPS=$(LOOPS) $(if $(CRASH_SEED),LODESTREAM_CRASH_SEED=$(CRASH_SEED)) $(GO) test -count=1 -timeout 60m ./integration/ -run 'TestCrashMatrix$$' -v

# The exactly-once producer across failover (docs/client.md): kill -9 the
# partition primary LOOPS times during a produce stream (go test runs 3), and
# lose the replies of committed sends through proxies; then every message is
# read back exactly once, in order, on every node.
LOOPS ?= 20
client-failover:
	LODESTREAM_FAILOVER_LOOPS=$(LOOPS) $(GO) test -count=1 -timeout 60m ./integration/ -run 'TestClusterClientExactlyOnceAcrossPrimaryKills|TestClusterClientLostRepliesNotDuplicated' -v

# Real-process nemesis (docs/nemesis.md): 3- and 5-node clusters on
# loopback under SIGKILL, SIGSTOP/SIGCONT, full restarts and replica-bus
# faults (a frame-aware proxy drops, delays and cuts links one way or both),
# with leader-aware and SDK-style producers and group consumers; a read-back
# checks every acknowledged message, copies, polls, consumer offsets and
# byte-identical segments. DURATION is each cluster size's faulty phase
# (default 10m). A plain `go test` runs a one-minute slice. Extra flags:
# NEMESIS_FLAGS="-nemesis.seed=S -nemesis.nodes=5 -nemesis.exactly-once -nemesis.out=DIR".
NEMESIS_FLAGS ?=
nemesis:
	$(GO) test -count=1 -timeout 0 ./integration/nemesis/ -run 'TestNemesis$$' -nemesis.duration=$(or $(DURATION),10m) $(NEMESIS_FLAGS) -v

# Soak: the same under the nemesis for DURATION (default 1h), sampling
# throughput, p99 send latency and each server's RSS, open fds and CPU into
# docs/soak/soak.csv and soak.png (docs/nemesis.md).
SOAK_OUT ?= $(CURDIR)/docs/soak
soak:
	$(GO) test -count=1 -timeout 0 ./integration/nemesis/ -run 'TestSoak$$' -soak.duration=$(or $(DURATION),1h) -soak.out=$(SOAK_OUT) $(NEMESIS_FLAGS) -v

# Everything CI checks: vet + gofmt, unit tests, race on concurrent packages,
# and a bounded simulator sweep.
test: lint test-unit test-race sim-ci

# The real-process tests (./integration/) run once, under -race in
# test-race (their server binaries are race-built there); only the two
# that -race skips (crash matrix, all-node kill loop) run here as well.
UNIT_PKGS = $(shell $(GO) list $(PKGS) | grep -v '/integration$$')
RACE_SKIPPED_INTEGRATION := 'TestCrashMatrix$$|TestClusterAllNodesKilledMidProduce$$'
test-unit:
	$(GO) test -count=1 -timeout 20m $(UNIT_PKGS)
	$(GO) test -count=1 -timeout 20m ./integration/ -run $(RACE_SKIPPED_INTEGRATION)

test-race:
	$(GO) test -count=1 -race -timeout 20m $(RACE_PKGS)

# Power cuts of whole nodes on simulated disks (node/powerloss*_test.go):
# POWERLOSS_SEEDS single-node cuts and CLUSTER_SEEDS rack cuts of an
# in-process 3-node cluster (make test runs 3 and 1).
POWERLOSS_SEEDS ?= 20
CLUSTER_SEEDS   ?= 5
powerloss:
	$(GO) test -count=1 -timeout 0 ./node/ -run 'TestNodePowerLoss$$|TestClusterPowerLossOfEveryNode$$' \
		-node.powerloss.seeds=$(POWERLOSS_SEEDS) -node.powerloss.cluster.seeds=$(CLUSTER_SEEDS) -v

SIM_FLAGS ?=
sim:
	$(GO) test -count=1 -timeout 0 ./consensus/sim/ -run TestSimSweep -sim.seeds=$(SEEDS) $(SIM_FLAGS) -v

# The whole-node simulator (node/nodesim_*_test.go, docs/simulator.md
# "Whole-node simulator"): SEEDS seeds from NODESIM_FIRST, NODESIM_STEPS
# faulty steps (1 ms of virtual time) each, then the heal and the checks.
NODESIM_FIRST ?= 1
NODESIM_STEPS ?= 100000
sim-nodes:
	$(GO) test -count=1 -timeout 0 ./node/ -run 'TestNodeSim$$' -nodesim.seeds=$(SEEDS) \
		-nodesim.first=$(NODESIM_FIRST) -nodesim.steps=$(NODESIM_STEPS) -v

# The metadata simulator (node/metasim_*_test.go, docs/simulator.md
# "Metadata simulator"): the seeds METASIM_FIRST..METASIM_FIRST+SEEDS-1,
# METASIM_STEPS faulty steps each. METASIM_FLAGS by default runs only the
# seeds that carry messages with every fault kind enabled (about a fifth;
# the others are skipped at no cost): METASIM_FLAGS= runs them all.
METASIM_FIRST ?= 1
METASIM_STEPS ?= 100000
METASIM_FLAGS ?= -metasim.everyfault -metasim.messages
sim-meta:
	$(GO) test -count=1 -timeout 0 ./node/ -run 'TestMetaSim$$' -metasim.seeds=$(SEEDS) \
		-metasim.first=$(METASIM_FIRST) -metasim.steps=$(METASIM_STEPS) $(METASIM_FLAGS) -v

# CI slice of the simulator. The regression seeds (every seed that ever
# failed, consensus/sim/testdata/regression_seeds.txt) run with the unit
# tests. Fixed ranges: 2,000 default seeds, 500 crash-heavy ones, 300
# with leadership hand-overs, 300 with Readys held before their
# Advance (async), 300 with quiet ticks skipped (skip) and 300 with power
# losses and amnesia (powerloss), 300 with lost storage and rack power
# losses (storagelost-rack). A fresh range on every run, derived from the commit hash (printed, so a failure reproduces with the same -sim.first):
# 1,500 default + 500 crash-heavy seeds. About two and a half minutes on 2
# cores; `make sim SEEDS=20000` for a sweep.
SIM_FRESH_FIRST ?= $(shell h=$$(git rev-parse --short=7 HEAD 2>/dev/null) && echo $$((1000000000 + 0x$$h * 4)) || echo $$((1000000000 + $$(date +%s) % 1000000000)))
sim-ci:
	$(GO) test -count=1 -timeout 10m ./consensus/sim/ -run TestSimSweep -sim.seeds=2000
	$(GO) test -count=1 -timeout 10m ./consensus/sim/ -run TestSimSweep -sim.seeds=500 -sim.first=100001 -sim.profile=crashy
	$(GO) test -count=1 -timeout 10m ./consensus/sim/ -run TestSimSweep -sim.seeds=300 -sim.first=200001 -sim.profile=handover
	$(GO) test -count=1 -timeout 10m ./consensus/sim/ -run TestSimSweep -sim.seeds=300 -sim.first=400001 -sim.profile=async
	$(GO) test -count=1 -timeout 10m ./consensus/sim/ -run TestSimSweep -sim.seeds=300 -sim.first=500001 -sim.profile=skip
	$(GO) test -count=1 -timeout 10m ./consensus/sim/ -run TestSimSweep -sim.seeds=300 -sim.first=600001 -sim.profile=powerloss
	$(GO) test -count=1 -timeout 10m ./consensus/sim/ -run TestSimSweep -sim.seeds=300 -sim.first=700001 -sim.profile=storagelost-rack
	@echo "sim-ci fresh range: default seeds $(SIM_FRESH_FIRST)..$$(($(SIM_FRESH_FIRST) + 1499)), crashy seeds $$(($(SIM_FRESH_FIRST) + 1500))..$$(($(SIM_FRESH_FIRST) + 1999)) (SIM_FRESH_FIRST=$(SIM_FRESH_FIRST))"
	$(GO) test -count=1 -timeout 10m ./consensus/sim/ -run TestSimSweep -sim.seeds=1500 -sim.first=$(SIM_FRESH_FIRST)
	$(GO) test -count=1 -timeout 10m ./consensus/sim/ -run TestSimSweep -sim.seeds=500 -sim.first=$$(($(SIM_FRESH_FIRST) + 1500)) -sim.profile=crashy
	$(GO) test -count=1 -timeout 10m ./node/ -run 'TestNodeSim$$' -nodesim.seeds=40 -nodesim.first=6000 -nodesim.steps=100000
	$(GO) test -count=1 -timeout 10m ./node/ -run 'TestMetaSim$$' -metasim.seeds=40 -metasim.first=5000 -metasim.steps=100000

lint:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Fuzz every Fuzz* target of the decoder packages for FUZZTIME each. A run
# that fails without writing a crashing input (Go 1.26's "context deadline
# exceeded" flake, golang/go#75804) is retried once; a saved input fails.
FUZZ_PKGS ?= ./wire/ ./metadata/ ./journal/ ./config/ ./transport/ ./transport/bus/
fuzz:
	@for p in $(FUZZ_PKGS); do \
	  for t in $$($(GO) test -list 'Fuzz.*' $$p | grep ^Fuzz); do \
	    echo "== $$p $$t"; \
	    if ! $(GO) test $$p -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME); then \
	      if [ -n "$$(git status --porcelain -- $$p/testdata/fuzz/$$t)" ]; then exit 1; fi; \
	      echo "   no crasher saved; retrying once"; \
	      $(GO) test $$p -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) || exit 1; \
	    fi; \
	  done; \
	done

clean:
	rm -rf $(BIN)
