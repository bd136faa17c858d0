package device

import "time"

// KernelCompile is how a device made its kernels ready when it opened:
// how long that took and whether it found them in a cache of an earlier
// compile instead of compiling them.
type KernelCompile struct {
	Duration time.Duration
	Cached   bool
}

// KernelCompiler is a device that compiles its kernels as it opens (a
// CUDA GPU, with NVRTC, or from its kernel cache), before the rest of its
// opening (a context): KernelCompile says how that went, so that a run can
// report it apart from the opening. A device with nothing to compile (the
// host, the simulated GPU) does not implement it.
type KernelCompiler interface {
	KernelCompile() KernelCompile
}
