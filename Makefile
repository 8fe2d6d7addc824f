# redamo — see README.md. `make run` starts on the embedded store; `make test`
# installs what the tests need (Java, DynamoDB Local, redis-server) and runs them.
GO      ?= go
BIN     := bin/redamo
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: all build run test unit bench compat fuzz fmt vet clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/redamo

run: build
	./$(BIN) --store memory --addr 127.0.0.1:6379

# Everything: unit tests, storetest on memory and DynamoDB Local, TCP server
# tests on both backends, the compat suite against a real redis-server.
test:
	scripts/test.sh

# Only what needs nothing installed (memory backend).
unit:
	$(GO) test ./...

bench: build
	scripts/bench.sh

compat:
	scripts/compat.sh

# The whole-surface fuzzer for a long time (REDAMO_FUZZ_DURATION, default
# 10m) with a random seed, then the native fuzz targets; make test runs
# its short form with fixed seeds.
fuzz:
	scripts/fuzz.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...

clean:
	rm -rf bin .cache
