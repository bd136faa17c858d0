//go:build purego

package hostmath

// Without cgo the float32 softmax kernels are the Go loops.

func softmaxRowsF32(p []float32, rows, n, ld, r0 int, causal bool) {
	softmaxRowsGo(p, rows, n, ld, r0, causal)
}

func softmaxGradRowsF32(ds, p, dp []float32, rows, n, ld, r0 int, causal bool) {
	softmaxGradRowsGo(ds, p, dp, rows, n, ld, r0, causal)
}

func softmaxScaledRowsF32(dst, x []float32, rows, n int, scale float32, lse []float64) {
	softmaxScaledRowsGo(dst, x, rows, n, scale, lse)
}

// softmaxISA and softmaxISAs name the one implementation: the Go loops.
var (
	softmaxISA  = 0
	softmaxISAs = []struct {
		name string
		isa  int
	}{{"go", 0}}
)
