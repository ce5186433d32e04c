# Developer entry points. `make test` is what CI runs (through .ci/run).
SHELL := /bin/bash
GO ?= go
PKGS ?= ./...
# -p 1: test binaries run one at a time. They share one Fluss cluster and two cores; in parallel, a
# package that starts private clusters (JVMs) could starve another's table creation for minutes.
GOTEST_FLAGS ?= -race -count=1 -p 1 -timeout 25m
BENCH ?= .
BENCH_PKGS ?= ./...
BENCHTIME ?= 1s

.PHONY: all build test cluster-start cluster-stop cluster-status generate lint bench demo pyfluss-venv

all: lint test

build:
	$(GO) build ./...

# Unit + integration tests with the race detector. Integration tests need a Fluss cluster:
# FLUSS_BOOTSTRAP when set, otherwise one started for the run by scripts/with-fluss.sh
# (`go test` run directly starts one per test binary through internal/flusstest instead).
test: pyfluss-venv
	scripts/with-fluss.sh $(GO) test $(GOTEST_FLAGS) $(PKGS)

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

# Regenerates the protobuf code (needs protoc and protoc-gen-go, see README).
generate:
	@command -v protoc >/dev/null || { echo "protoc missing: apt-get install protobuf-compiler" >&2; exit 1; }
	@command -v protoc-gen-go >/dev/null || { echo "protoc-gen-go missing: go install google.golang.org/protobuf/cmd/protoc-gen-go@latest (and put \$$(go env GOPATH)/bin on PATH)" >&2; exit 1; }
	$(GO) generate ./...

lint:
	@out=$$(find . -name '*.go' -not -path './.cache/*' -not -path './vendor/*' -print0 | xargs -0 gofmt -l); \
	if [[ -n $$out ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@if command -v shellcheck >/dev/null; then shellcheck scripts/*.sh .ci/run; else echo "shellcheck not installed; skipped"; fi

bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) $(BENCH_PKGS)

demo:
	scripts/demo.sh
