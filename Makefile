# gpuz — build, run and test. `make help` lists the targets.
#
#   make run     installs deps, builds bin/gpuz, runs `gpuz linear train cuda,cache,cpu`
#                (with an NVIDIA driver: builds and runs the GPU binary bin/gpuz-cuda)
#   make test    installs deps, checks gofmt, runs go vet and go test
#   make install builds bin/gpuz and copies it to $(PREFIX)/bin/gpuz (default
#                ~/.local/bin; PREFIX=/usr/local, as root, for /usr/local/bin)
#                so that the docs' `gpuz …` commands run as written
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
# the system has no CUDA headers: 11.8 (driver R520 or newer), 12.4 (R550),
# or 13 (R580: compiled against 12.4's headers, linked to load CUDA 13's
# cuBLAS and NVRTC). make dist-cuda builds 13 unless CUDA is given.
CUDA  ?= 11.8
# make install copies $(BIN) to $(BINDIR)/gpuz: ~/.local/bin by default,
# which Debian's ~/.profile puts on PATH when it exists at login; PREFIX=/usr/local
# (as root) for /usr/local/bin, always on PATH.
PREFIX ?= $(HOME)/.local
BINDIR ?= $(PREFIX)/bin

.DEFAULT_GOAL := build
.PHONY: help deps build install run test test-purego bench smoke docs generate clean cuda test-cuda dist-cuda

help:
	@echo "targets:"
	@echo "  deps         install gcc, libc6-dev and libopenblas-dev if missing (scripts/install-deps.sh)"
	@echo "  build        deps, then go build -o $(BIN) ./cmd/gpuz (default)"
	@echo "  install      build, then copy $(BIN) to $(BINDIR)/gpuz (PREFIX=$(PREFIX); PREFIX=/usr/local, as root,"
	@echo "               for /usr/local/bin) so that gpuz runs as the docs write it; says so when it is not on PATH"
	@echo "  run          build, then $(BIN) \$$ARGS (default ARGS: $(ARGS)); with an NVIDIA driver, make cuda"
	@echo "               (fetching CUDA $(CUDA) if needed) and bin/gpuz-cuda \$$ARGS instead (GPU=0: never)"
	@echo "  test         deps, gofmt check, go vet ./..., go test ./..."
	@echo "  test-purego  go vet and go test with -tags purego (gonum BLAS, no OpenBLAS)"
	@echo "  bench        go test benchmarks of ./internal/... (-benchtime 3x)"
	@echo "  smoke        build, then scripts/smoke.sh $(BIN)"
	@echo "  docs         regenerate docs/usage/, one page per command, from the commands' help (make test fails when it is stale)"
	@echo "  generate     go generate ./...: the CPU shim's kernel table (internal/device/gpu/shimthunks.h) from the .cu"
	@echo "               sources, the performance model's ops by class (internal/perfmodel/opclasses.go) from the ops'"
	@echo "               class methods (make test fails when either is stale)"
	@echo "  cuda         build the GPU binary bin/gpuz-cuda (-tags gpuzcuda; needs the CUDA 11 or 12 headers and libraries,"
	@echo "               the system's or those make test-cuda fetched; CUDA=$(CUDA) picks the fetched version: 11.8, 12.4,"
	@echo "               or 13, which compiles against 12.4's headers and links to load CUDA 13's cuBLAS and NVRTC)"
	@echo "  test-cuda    fetch Debian's CUDA 11.8 and 12.4 headers/stubs/NVRTC (scripts/cuda-toolchain.sh), vet and build the"
	@echo "               GPU binary against each and for CUDA 13, compile every kernel with NVRTC, run the kernels on the"
	@echo "               CPU shim (no GPU needed)"
	@echo "  dist-cuda    dist/gpuz-cuda<ver>-linux-amd64.tar.gz: the GPU binary (purego: no OpenBLAS needed), gpu-check.sh,"
	@echo "               torch_reference.py and a README, to unpack and run on a GPU machine (CUDA=13 unless given: 12.4, 11.8)"
	@echo "  clean        remove bin/ and dist/"

deps:
	@bash scripts/install-deps.sh

# The first build compiles gorgonia and the OpenBLAS bindings, which takes
# about a minute with no output from go build: say so first.
build: deps
	@echo "building $(BIN) (the first build compiles gorgonia and the OpenBLAS bindings: about a minute)"
	$(GOBUILD) -o $(BIN) ./cmd/gpuz

# install copies the default build where the docs' `gpuz …` commands find
# it, and says when that directory is not on PATH (a ~/.local/bin made
# after login is not, until the next login).
install: build
	install -d "$(BINDIR)"
	install -m 755 $(BIN) "$(BINDIR)/gpuz"
	@case ":$$PATH:" in \
	*":$(BINDIR):"*) echo "installed $(BINDIR)/gpuz: gpuz is on PATH" ;; \
	*) echo "installed $(BINDIR)/gpuz, but $(BINDIR) is not on PATH: add it (export PATH=\"$(BINDIR):\$$PATH\")," \
		"or make install PREFIX=/usr/local as root, or run $(BIN) instead of gpuz" ;; \
	esac

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
	$(GO) test -timeout 30m ./...

test-purego: deps
	$(GO) vet -tags purego ./...
	$(GO) test -timeout 30m -tags purego ./internal/...

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 3x ./internal/...

smoke: build
	bash scripts/smoke.sh $(BIN)

# docs/usage/ holds one Markdown page per command, generated by cobra's doc
# package from the command tree (cmd/gpuz/usagedocs_test.go). go test ./...
# fails when the committed pages differ from what the commands generate;
# this target rewrites them.
docs: deps
	$(GO) test -count=1 -run '^TestUsageDocs$$' ./cmd/gpuz -update

# Two files are generated, each by a test of the package that declares what
# it lists, and go test ./... fails when either is stale:
# internal/device/gpu/shimthunks.h, the CPU shim's includes and kernel
# table, from the .cu sources' GPUZ_KERNEL declarations (its test builds
# without cgo, so that a header stale enough to keep the shim from
# compiling can still be rewritten), and internal/perfmodel/opclasses.go,
# the ops of each class of the performance model, from the ops' class
# methods.
generate: deps
	$(GO) generate ./...

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
# fails, never skips, when a toolchain cannot be fetched. For CUDA 13 it
# builds against 12.4's headers and generated libcublas.so.13 and
# libnvrtc.so.13 stubs and checks the binary's NEEDED entries (readelf) and
# that no cuBLAS or NVRTC reference is versioned (nm).
test-cuda: deps
	@bash scripts/test-cuda.sh 11.8
	@bash scripts/test-cuda.sh 12.4
	@bash scripts/test-cuda.sh 13
	@echo "$(GO) test ./internal/device/gpu/ (the kernels on the CPU shim against the host)"
	@$(GO) test -count=1 ./internal/device/gpu/

# dist-cuda packs the GPU binary for a machine with a GPU and no Go:
# dist/gpuz-cuda<ver>-linux-amd64.tar.gz (scripts/dist-cuda.sh, at most 30
# MB). Unpacked anywhere there, ./gpu-check.sh finds the CUDA libraries and
# runs the checks. CUDA 13 unless CUDA is given on the command line or in
# the environment.
dist-cuda: deps
	@GO="$(GO)" bash scripts/dist-cuda.sh $(if $(filter command line environment,$(origin CUDA)),$(CUDA),13)

clean:
	rm -rf bin dist
