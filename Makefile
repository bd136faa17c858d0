# gpuz — build, run and test. `make help` lists the targets.
#
#   make run     installs deps, builds bin/gpuz, runs `gpuz linear train cuda,cache,cpu`
#                (with an NVIDIA driver: builds and runs the GPU binary bin/gpuz-cuda)
#   make test    installs deps, checks gofmt, runs go vet and go test
#
# Override the command line of `make run` with ARGS, e.g.
#   make run ARGS="linear eval cpu --scale small"

# Go installed by the official tarball lives in /usr/local/go/bin; use it when
# no go is on PATH (a go already on PATH comes first).
export PATH := $(PATH):/usr/local/go/bin

GO    ?= go
# -buildvcs=auto stamps the binary with the commit it was built from (gpuz
# version and every saved result name it) even where GOFLAGS turns stamping
# off; outside a git checkout it builds unstamped.
GOBUILD = $(GO) build -buildvcs=auto
GOFMT ?= gofmt
BIN   := bin/gpuz
ARGS  ?= linear train cuda,cache,cpu
# CUDA version of the toolchain make cuda fetches or uses from ~/.cache when
# the system has no CUDA headers: 11.8 (driver R520 or newer) or 12.4 (R550).
CUDA  ?= 11.8

.DEFAULT_GOAL := build
.PHONY: help deps build run test test-purego bench smoke clean cuda test-cuda

help:
	@echo "targets:"
	@echo "  deps         install gcc, libc6-dev and libopenblas-dev if missing (scripts/install-deps.sh)"
	@echo "  build        deps, then go build -o $(BIN) ./cmd/gpuz (default)"
	@echo "  run          build, then $(BIN) \$$ARGS (default ARGS: $(ARGS)); with an NVIDIA driver, make cuda"
	@echo "               (fetching CUDA $(CUDA) if needed) and bin/gpuz-cuda \$$ARGS instead (GPU=0: never)"
	@echo "  test         deps, gofmt check, go vet ./..., go test ./..."
	@echo "  test-purego  go vet and go test with -tags purego (gonum BLAS, no OpenBLAS)"
	@echo "  bench        go test benchmarks of ./internal/... (-benchtime 3x)"
	@echo "  smoke        build, then scripts/smoke.sh $(BIN)"
	@echo "  cuda         build the GPU binary bin/gpuz-cuda (-tags gpuzcuda; needs the CUDA 11 or 12 headers and libraries,"
	@echo "               the system's or those make test-cuda fetched; CUDA=$(CUDA) picks the fetched version)"
	@echo "  test-cuda    fetch Debian's CUDA 11.8 and 12.4 headers/stubs/NVRTC (scripts/cuda-toolchain.sh), vet and build the"
	@echo "               GPU binary against each, compile every kernel with NVRTC, run the kernels on the CPU shim (no GPU needed)"
	@echo "  clean        remove bin/"

deps:
	@bash scripts/install-deps.sh

# The first build compiles gorgonia and the OpenBLAS bindings, which takes
# about a minute with no output from go build: say so first.
build: deps
	@echo "building $(BIN) (the first build compiles gorgonia and the OpenBLAS bindings: about a minute)"
	$(GOBUILD) -o $(BIN) ./cmd/gpuz

# make run on a machine with an NVIDIA driver (scripts/cuda-driver.sh:
# libcuda.so.1 in `ldconfig -p`, or /proc/driver/nvidia/version) builds the
# GPU binary, fetching CUDA $(CUDA) into ~/.cache when the system has no CUDA
# headers or cuBLAS, and runs the reference benchmark with it; GPU=0 forces
# the default build. Without a driver it builds and runs bin/gpuz.
ifneq ($(filter run,$(MAKECMDGOALS)),)
GPU_DRIVER := $(if $(filter 0,$(GPU)),,$(shell bash scripts/cuda-driver.sh 2>/dev/null))
endif

ifneq ($(GPU_DRIVER),)
run: deps
	@echo "NVIDIA driver found ($(GPU_DRIVER)): building and running the GPU build (make run GPU=0 for the default build)"
	@GO="$(GO)" CUDA="$(CUDA)" bash scripts/cuda-build.sh --fetch
	./bin/gpuz-cuda $(ARGS)
else
run: build
	./$(BIN) $(ARGS)
endif

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

# The GPU build's tag is gpuzcuda, not cuda: gorgonia's own package compiles
# its cuDNN engine under the cuda tag, and cuDNN is not available here.
# scripts/cuda-build.sh first checks that cuda.h, cublas_v2.h, nvrtc.h and the
# libraries are there (the system's, or a toolchain fetched into
# ~/.cache/gpuz-cuda-$(CUDA)) and says in one line what is missing if not.
cuda: deps
	@GO="$(GO)" CUDA="$(CUDA)" bash scripts/cuda-build.sh

# test-cuda needs no GPU. For each CUDA version (Debian bookworm's 11.8 and
# trixie's 12.4, fetched into ~/.cache/gpuz-cuda-VERSION once) it vets and
# builds the GPU binary, NVRTC-compiles the kernels, checks the binary's
# libraries with ldd and starts it against the stub driver, where it must stop
# with its one-line "no usable CUDA GPU" message and status 2
# (scripts/test-cuda.sh); then it runs the kernels on the CPU shim once. It
# fails, never skips, when a toolchain cannot be fetched.
test-cuda: deps
	@bash scripts/test-cuda.sh 11.8
	@bash scripts/test-cuda.sh 12.4
	@echo "$(GO) test ./internal/device/gpu/ (the kernels on the CPU shim against the host)"
	@$(GO) test -count=1 ./internal/device/gpu/

clean:
	rm -rf bin
