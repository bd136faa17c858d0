package device

import "time"

// KernelCompile is how a device made its kernels ready when it opened (a
// CUDA GPU, with NVRTC, or from its kernel cache), before the rest of its
// opening (a context): how long that took and whether it found them in a
// cache of an earlier compile instead of compiling them (Caps.Compile).
type KernelCompile struct {
	Duration time.Duration
	Cached   bool
}
