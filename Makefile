# Lodestream: an Iggy-compatible, VSR-replicated message-streaming server.
GO        ?= go
BIN       := bin
PKGS      := ./...
# Packages that run goroutines get the race detector.
RACE_PKGS ?= ./transport/... ./node/... ./client/... ./integration/...
SEEDS     ?= 50
FUZZTIME  ?= 60s

.PHONY: build run test test-unit test-race sim sim-ci lint bench fuzz clean

build:
	$(GO) build -o $(BIN)/ ./cmd/...

run: build
	IGGY_SYSTEM_PATH=$${IGGY_SYSTEM_PATH:-local_data} ./$(BIN)/iggy-server --with-default-root-credentials

# Everything CI checks: vet + gofmt, unit tests, race on concurrent packages,
# and a bounded simulator sweep.
test: lint test-unit test-race sim-ci

test-unit:
	$(GO) test -count=1 -timeout 20m $(PKGS)

test-race:
	$(GO) test -count=1 -race -timeout 20m $(RACE_PKGS)

sim:
	$(GO) test -count=1 -timeout 0 ./consensus/sim/ -run TestSimSweep -sim.seeds=$(SEEDS) -v

sim-ci:
	$(GO) test -count=1 -timeout 10m ./consensus/sim/ -run TestSimSweep -sim.seeds=200

lint:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

fuzz:
	@for t in $$($(GO) test -list 'Fuzz.*' ./wire/ | grep ^Fuzz); do \
	  echo "== $$t"; $(GO) test ./wire/ -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) || exit 1; done

clean:
	rm -rf $(BIN)
