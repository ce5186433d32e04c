# Developer entry points. `make test` is what CI runs (through .ci/run).
SHELL := /bin/bash
GO ?= go
PKGS ?= ./...
# The client-compatibility tests (sarama, confluent-kafka-go with cgo, segmentio/kafka-go) are the
# nested module compat/, so that the product's go.mod does not list those clients. `make test`
# runs both modules; COMPAT_PKGS selects compat's packages, and is empty (compat skipped) when
# PKGS narrows the run, unless given too.
ifeq ($(origin PKGS),file)
COMPAT_PKGS ?= ./...
endif
# -p 1: test binaries run one at a time. They share one Fluss cluster and two cores; in parallel, a
# package that starts private clusters (JVMs) could starve another's table creation for minutes.
GOTEST_FLAGS ?= -race -count=1 -p 1 -timeout 35m
BENCH ?= .
BENCH_PKGS ?= ./...
BENCHTIME ?= 1s

.PHONY: all build test test-modules test-fluss-faults readme-graph cluster-start cluster-stop cluster-status generate lint bench demo pyfluss-venv

all: lint test

build:
	$(GO) build ./...

# Unit + integration tests with the race detector. Integration tests need a Fluss cluster:
# FLUSS_BOOTSTRAP when set, otherwise one started for the run by scripts/with-fluss.sh
# (`go test` run directly starts one per test binary through internal/flusstest instead).
test: pyfluss-venv
	scripts/with-fluss.sh $(MAKE) --no-print-directory test-modules

# Run by `test` inside scripts/with-fluss.sh: the root module, then compat/, against the same
# cluster; compat/ runs even when the root module failed, and the target fails if either did.
test-modules:
	@rc=0; \
	echo '$(GO) test $(GOTEST_FLAGS) $(PKGS)'; \
	$(GO) test $(GOTEST_FLAGS) $(PKGS) || rc=$$?; \
	if [[ -n '$(COMPAT_PKGS)' ]]; then \
		echo 'cd compat && $(GO) test $(GOTEST_FLAGS) $(COMPAT_PKGS)'; \
		(cd compat && $(GO) test $(GOTEST_FLAGS) $(COMPAT_PKGS)) || rc=$$?; \
	fi; \
	exit $$rc

# The long schedule of faults inside a replicated Fluss cluster (e2e.TestFlussFaults: twelve
# faults in a row, each of the six kinds twice, ordered by FLUSS_FAULT_SEED); `make test` runs the
# short one (each fault once). FLUSS_FAULT_SESSION_TIMEOUT=60s measures Fluss's default failure
# detection.
FLUSS_FAULT_SEED ?= 1
test-fluss-faults: pyfluss-venv
	FLUSS_FAULT_SCHEDULE=long FLUSS_FAULT_SEED=$(FLUSS_FAULT_SEED) \
		$(GO) test -count=1 -timeout 80m -run 'TestFlussFaults$$' -v ./e2e

pyfluss-venv:
	@scripts/pyfluss-venv.sh >/dev/null

# A long-lived local cluster for development: prints FLUSS_BOOTSTRAP=...; NAME selects the cluster.
NAME ?= default
TABLET_SERVERS ?= 1
cluster-start:
	scripts/fluss-local.sh start -s $(NAME) -n $(TABLET_SERVERS)

cluster-stop:
	scripts/fluss-local.sh stop -s $(NAME)

cluster-status:
	scripts/fluss-local.sh status -s $(NAME)

# A long-lived local schema registry (Apicurio, in memory, on 127.0.0.1): prints
# SCHEMA_REGISTRY_URL=...; REGISTRY_NAME selects the instance, REGISTRY_PORT its HTTP port.
.PHONY: registry-start registry-stop registry-status serde-venv
REGISTRY_NAME ?= default
REGISTRY_PORT ?=
registry-start:
	scripts/registry-local.sh start -s $(REGISTRY_NAME) $(if $(REGISTRY_PORT),-p $(REGISTRY_PORT))

registry-stop:
	scripts/registry-local.sh stop -s $(REGISTRY_NAME)

registry-status:
	scripts/registry-local.sh status -s $(REGISTRY_NAME)

# The venv of Confluent's Python serializers (tools/pyfluss/serde_produce.py).
serde-venv:
	@scripts/serde-venv.sh >/dev/null

# Regenerates the protobuf code (needs protoc and protoc-gen-go, see README).
generate:
	@command -v protoc >/dev/null || { echo "protoc missing: apt-get install protobuf-compiler" >&2; exit 1; }
	@command -v protoc-gen-go >/dev/null || { echo "protoc-gen-go missing: go install google.golang.org/protobuf/cmd/protoc-gen-go@latest (and put \$$(go env GOPATH)/bin on PATH)" >&2; exit 1; }
	$(GO) generate ./...

# Rewrites README's import graph from go list (internal/layering checks it).
readme-graph:
	UPDATE_README=1 $(GO) test -count=1 -run TestReadmeImportGraph ./internal/layering/

lint:
	@out=$$(find . -name '*.go' -not -path './.cache/*' -not -path './vendor/*' -print0 | xargs -0 gofmt -l); \
	if [[ -n $$out ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd compat && $(GO) vet ./...
	@if command -v shellcheck >/dev/null; then shellcheck -x scripts/*.sh scripts/lib/*.sh .ci/run; else echo "shellcheck not installed; skipped"; fi

bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) $(BENCH_PKGS)

# The Kafka baseline (docs/benchmarks.md): the same producers against the gateway + Fluss and against
# a local Kafka broker (scripts/kafka-local.sh, started and stopped by the bench), alternated, medians.
# Fluss: FLUSS_BOOTSTRAP (and FLUSS_LOCAL_CLUSTER for the tablet server's CPU) or a cluster started for
# the run. BENCH_KAFKA_FLAGS adds gateway-bench flags, e.g. BENCH_KAFKA_FLAGS='-repeats 5 -rate 20000'.
.PHONY: bench-kafka
bench-kafka:
	scripts/with-fluss.sh $(GO) run ./tools/gateway-bench -kafka $(BENCH_KAFKA_FLAGS)

# What a user would otherwise run (docs/benchmarks.md): the same producers into a local Kafka broker
# and a Flink 1.20 job (Kafka source -> Fluss's Flink connector, jars resolved from Maven Central),
# against the gateway, alternated, medians. BENCH_FLINK_FLAGS adds gateway-bench flags, e.g.
# BENCH_FLINK_FLAGS='-records 300000 -rate 20000' for the time from produce to a readable row.
.PHONY: bench-flink
bench-flink:
	scripts/with-fluss.sh $(GO) run ./tools/gateway-bench -flink $(BENCH_FLINK_FLAGS)

# The exactly-once goals in one run (docs/benchmarks.md): default vs exactly_once: false, 500 tables vs 1,
# 200 producers vs 10, vs Fluss's Java writer, vs Kafka + Flink; alternated, medians, one table of ratios.
# The cluster keeps 1 MiB log indexes (docs/deployment.md, many tables). BENCH_GOALS_FLAGS adds flags,
# e.g. BENCH_GOALS_FLAGS='-goals eo,tables -repeats 5'.
.PHONY: bench-goals
bench-goals:
	FLUSS_SETTINGS="log.index.file-size=1m $(FLUSS_SETTINGS)" scripts/with-fluss.sh $(GO) run ./tools/gateway-bench -goals all $(BENCH_GOALS_FLAGS)

demo:
	scripts/demo.sh
