//go:build purego

package hostmath

// directTriGemm is false without cgo: the attention products run the BLAS
// in blocks.
const directTriGemm = false

func triGemmScratch(n, k int) int { return 0 }

func triGemmFloat32(tri triangle, m, n, k int, alpha float32, a []float32, rsa, csa int, b []float32, rsb, csb int, beta float32, c []float32, ldc int, scratch []float32) {
	panic("hostmath: no direct product in a purego build")
}
