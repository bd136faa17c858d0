# gpuz — build, run and test. `make help` lists the targets.
#
#   make run     installs deps, builds bin/gpuz, runs `gpuz linear train cuda,cache,cpu`
#   make test    installs deps, checks gofmt, runs go vet and go test
#
# Override the command line of `make run` with ARGS, e.g.
#   make run ARGS="linear eval cpu --scale small"

# Go installed by the official tarball lives in /usr/local/go/bin; use it when
# no go is on PATH (a go already on PATH comes first).
export PATH := $(PATH):/usr/local/go/bin

GO    ?= go
GOFMT ?= gofmt
BIN   := bin/gpuz
ARGS  ?= linear train cuda,cache,cpu

.DEFAULT_GOAL := build
.PHONY: help deps build run test test-purego bench smoke clean

help:
	@echo "targets:"
	@echo "  deps         install gcc, libc6-dev and libopenblas-dev if missing (scripts/install-deps.sh)"
	@echo "  build        deps, then go build -o $(BIN) ./cmd/gpuz (default)"
	@echo "  run          build, then $(BIN) \$$ARGS (default ARGS: $(ARGS))"
	@echo "  test         deps, gofmt check, go vet ./..., go test ./..."
	@echo "  test-purego  go vet and go test with -tags purego (gonum BLAS, no OpenBLAS)"
	@echo "  bench        go test benchmarks of ./internal/... (-benchtime 3x)"
	@echo "  smoke        build, then scripts/smoke.sh $(BIN)"
	@echo "  clean        remove bin/"

deps:
	@bash scripts/install-deps.sh

build: deps
	$(GO) build -o $(BIN) ./cmd/gpuz

run: build
	./$(BIN) $(ARGS)

test: deps
	@echo "$(GOFMT) -l ."
	@out="$$($(GOFMT) -l .)" || exit 1; \
	if [ -n "$$out" ]; then \
		echo "gofmt: these files are not formatted (fix with gofmt -w):"; \
		echo "$$out"; \
		exit 1; \
	fi
	$(GO) vet ./...
	$(GO) test ./...

test-purego: deps
	$(GO) vet -tags purego ./...
	$(GO) test -tags purego ./internal/...

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 3x ./internal/...

smoke: build
	bash scripts/smoke.sh $(BIN)

clean:
	rm -rf bin
