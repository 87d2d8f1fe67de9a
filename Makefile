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

.PHONY: all build build-race cross run test vet gen gen-check kafka tools sim soak-failover matrix chaos bench bench-scale fuzz clean image release

all: build

# What `kraftd version` prints (cmd/kraftd/version.go): a release sets
# KRAFTD_VERSION; the commit and its date come from git, as this machine's
# Go is set to -buildvcs=false.
KRAFTD_VERSION ?= devel
KRAFTD_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo ' (modified)')
KRAFTD_DATE := $(shell git log -1 --format=%cI 2>/dev/null)
VERSION_LDFLAGS = -X 'main.version=$(KRAFTD_VERSION)' -X 'main.commit=$(KRAFTD_COMMIT)' -X 'main.date=$(KRAFTD_DATE)'

build:
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o bin/kraftd ./cmd/kraftd

# The race-detector build that the three-process quorum test runs.
build-race:
	$(GO) build -race -ldflags "$(VERSION_LDFLAGS)" -o bin/kraftd-race ./cmd/kraftd

# kraftd for linux, darwin (amd64, arm64) and windows/amd64, and go vet of
# the module for each; make test runs it in the background beside the suite.
cross:
	GO=$(GO) ./scripts/cross-check.sh

# The OCI image (docs/deploying.md, "Image") for linux/amd64 and linux/arm64,
# built without a container daemon by scripts/image: an OCI layout in
# bin/image/oci and the same as an oci-archive, bin/image/kraftd-oci.tar
# (podman load -i bin/image/kraftd-oci.tar). IMAGE_TAG names it (its OCI ref name).
IMAGE_TAG ?= kraftd:latest
IMAGE_LDFLAGS = -s -w -buildid= $(VERSION_LDFLAGS)
image:
	mkdir -p bin/image
	for arch in amd64 arm64; do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "$(IMAGE_LDFLAGS)" -o bin/image/kraftd-linux-$$arch ./cmd/kraftd || exit 1; \
	done
	$(GO) run ./scripts/image -bin linux/amd64=bin/image/kraftd-linux-amd64 -bin linux/arm64=bin/image/kraftd-linux-arm64 \
	  -oci bin/image/oci -tar bin/image/kraftd-oci.tar -tag $(IMAGE_TAG) -epoch $$(git log -1 --format=%ct)

# make release VERSION=x.y.z: reproducible stripped binaries for linux and
# darwin on amd64 and arm64 as tar.gz, the image for amd64 and arm64, their
# SHA256SUMS and the version's CHANGELOG.md notes, in bin/release/VERSION.
release:
	GO=$(GO) VERSION=$(VERSION) ./scripts/release.sh

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
	$(GO) vet -tags soak ./compat
	cd examples/failover && $(GO) vet ./...

# Record code from metadata/definitions, and each release's KafkaConfig
# facts from its jars (make kafka fetches them).
gen:
	$(GO) run ./metadata/gen
	./scripts/gen-config-defs.sh

gen-check: kafka
	./scripts/verify-gen.sh

# One report for the whole run (scripts/testreport): a line a package, the
# end of each failing test's output, then the 15 slowest tests, each
# package's time, a digest of the failures and the count. The verbose
# output is kept in bin/test-output.log. The simulator runs a few seeds in
# the race build and SIM_SEEDS in a plain one, which is ten times faster.
# The compat tests spend most of their time waiting on elections, sessions
# and timeouts, so more run at once than the 2 cores (-parallel defaults to
# GOMAXPROCS); compat.JVMBudget bounds the Apache JVMs among them.
SIM_SEEDS ?= 3000
TEST_PARALLEL ?= 5
test: tools kafka vet gen-check build build-race
	$(GO) build -o bin/testreport ./scripts/testreport
	set -o pipefail; GO=$(GO) CROSS_VET=per-os nice -n 19 ./scripts/cross-check.sh > bin/cross-check.log 2>&1 & cross=$$! ; \
	{ \
	  $(GO) test -race -count=1 -json -parallel $(TEST_PARALLEL) -timeout 50m ./... ; a=$$? ; \
	  $(GO) test -count=1 -json -timeout 20m -run 'TestSimulation$$' ./node/sim -sim.seeds=$(SIM_SEEDS) ; b=$$? ; \
	  (cd examples/failover && $(GO) test -race -count=1 -json -timeout 10m ./...) ; c=$$? ; \
	  exit $$((a | b | c)) ; } 2>&1 | bin/testreport -log bin/test-output.log ; t=$$? ; \
	if wait $$cross ; then echo "cross builds and vet: ok (bin/cross-check.log)" ; \
	else echo "cross builds or vet FAILED:" ; cat bin/cross-check.log ; t=1 ; fi ; exit $$t

# What make test samples, in full (build tag matrix; docs/testing.md keeps
# the last run): the release-line smoke set, dynamic quorum and
# kafka-features of every line 3.9 to 4.4, the rolling upgrades across
# lines, every leader kind of the kraft.version upgrade, and the metric-name
# capture against every Apache version.
matrix: build build-race kafka
	$(GO) test -race -count=1 -timeout 150m -tags matrix -v ./compat \
		-run 'TestReleaseLineSmoke|TestReleaseLineDynamicQuorum|TestFeaturesMatchApache|TestRollingUpgradeFromOldestLine|TestRollingHandoverKraftdToNewestLine|TestMixedKRaftVersionUpgrade|TestApacheControllerMetricNames'

# The silent-fault runs of make test at NEMESIS_ROUNDS rounds each, and the
# SIGKILL chaos tests (docs/testing.md keeps the last run). Needs root.
NEMESIS_ROUNDS ?= 10
chaos: build build-race kafka
	KRAFTD_NEMESIS_ROUNDS=$(NEMESIS_ROUNDS) $(GO) test -race -count=1 -timeout 120m -v ./compat \
		-run 'TestNemesisKraftdQuorum|TestNemesisMixedQuorum|TestChaosKraftdQuorum|TestChaosMixedQuorum'

# Run many simulation seeds: make sim SEEDS=100000
sim:
	$(GO) test ./node/sim -run 'TestSimulation$$' -count=1 -timeout 0 -v -sim.seeds=$(SEEDS)

# Run every fuzz test for FUZZTIME each, one after another: make fuzz FUZZTIME=5m
# (scripts/fuzz.sh -n lists the commands). Their seed corpora run in make test.
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

# Issue 33's spurious-election soak: a healthy three-node kraftd quorum
# beside stress-ng on every core, its leader paused 200 ms every few
# seconds, must keep its leader for SOAK (30m; docs/testing.md).
SOAK ?= 30m
soak-failover: build
	KRAFTD_SOAK_DURATION=$(SOAK) $(GO) test -tags soak -run 'TestSoakFailover$$' -count=1 -timeout 0 -v ./compat

bench: build kafka
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 120m ./...

# Only issue 18's scale benchmark (docs/scale-benchmark.md); the
# KRAFTD_SCALE_* variables shrink it.
bench-scale: build kafka
	$(GO) test -run '^$$' -bench 'BenchmarkControllerScale$$' -benchtime 1x -timeout 90m ./compat

clean:
	rm -rf bin
