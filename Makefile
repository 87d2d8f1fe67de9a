# kraftd build, run and test entry points. `make test` is what CI runs.
SHELL := /usr/bin/env bash
GO ?= go
# Apache Kafka jars are fetched by Maven into this cache, outside the repository.
KRAFTD_KAFKA_CACHE ?= $(HOME)/.cache/kraftd/kafka
export KRAFTD_KAFKA_CACHE
# The kraftd the kit package (and the tests using it) runs: the one `make build` made.
KRAFTD_BINARY ?= $(CURDIR)/bin/kraftd
export KRAFTD_BINARY
SEEDS ?= 10000
FUZZTIME ?= 30s

.PHONY: all build build-race run test vet gen gen-check kafka tools sim compat-matrix matrix bench bench-scale fuzz clean

all: build

build:
	$(GO) build -o bin/kraftd ./cmd/kraftd

# The race-detector build that the three-process quorum test runs.
build-race:
	$(GO) build -race -o bin/kraftd-race ./cmd/kraftd

# A standalone single-node quorum on 127.0.0.1:9093 with its data in ./data.
run: build
	./scripts/run-standalone.sh

tools:
	./scripts/check-tools.sh

# The newest patch of every Apache Kafka line 3.9 to 4.4, fetched with Maven (cached).
kafka: tools
	./scripts/fetch-kafka.sh
	./scripts/fetch-jmx-exporter.sh

vet:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags matrix ./compat
	cd examples/failover && $(GO) vet ./...

# Record code from metadata/definitions, and each release's KafkaConfig
# facts from its jars (make kafka fetches them).
gen:
	$(GO) run ./metadata/gen
	./scripts/gen-config-defs.sh

gen-check: kafka
	./scripts/verify-gen.sh

# The output is kept in bin/test-output.log; on a failure the digest of
# failing tests and their last lines ends the output (CI shows its end).
test: tools kafka vet gen-check build build-race
	set -o pipefail; $(GO) test -race -count=1 -timeout 80m ./... 2>&1 | tee bin/test-output.log || { ./scripts/failure-digest.sh bin/test-output.log; exit 1; }
	set -o pipefail; cd examples/failover && $(GO) test -race -count=1 -timeout 10m ./... 2>&1 | tee ../../bin/test-output-example.log || { ../../scripts/failure-digest.sh ../../bin/test-output-example.log; exit 1; }

# Run the compat matrices make test samples in full: every leader kind of
# the kraft.version upgrade, and the metric-name capture against every
# Apache version (make test runs one of each; the admin-tools and
# authorizer tests run every version there already).
compat-matrix: build build-race kafka
	KRAFTD_COMPAT_FULL_MATRIX=1 $(GO) test -race -count=1 -timeout 60m -run 'TestMixedKRaftVersionUpgrade|TestApacheControllerMetricNames' -v ./compat

# The release-line matrix of docs/compatibility.md in full: the smoke set
# of every line 3.9 to 4.4, kafka-features against each line, and the
# rolling upgrades across lines (build tag matrix: too long for make test).
matrix: build build-race kafka
	$(GO) test -race -count=1 -timeout 120m -tags matrix -v ./compat \
		-run 'TestReleaseLineSmoke|TestReleaseLineDynamicQuorum|TestFeaturesMatchApache|TestRollingUpgradeFromOldestLine|TestRollingHandoverKraftdToNewestLine'

# Run many simulation seeds: make sim SEEDS=100000
sim:
	$(GO) test ./node/sim -run 'TestSimulation$$' -count=1 -timeout 0 -v -sim.seeds=$(SEEDS)

# Run every fuzz test for FUZZTIME each, one after another: make fuzz FUZZTIME=5m
# (scripts/fuzz.sh -n lists the commands). Their seed corpora run in make test.
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

bench: build kafka
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 120m ./...

# Only issue 18's scale benchmark (docs/scale-benchmark.md); the
# KRAFTD_SCALE_* variables shrink it.
bench-scale: build kafka
	$(GO) test -run '^$$' -bench 'BenchmarkControllerScale$$' -benchtime 1x -timeout 90m ./compat

clean:
	rm -rf bin
