package hostmath

// triangle selects which part of a square causal product is computed; the
// diagonal is where the row index of C or A equals the column index of C
// (triC) or the term index k (triALower, triAUpper).
type triangle int

const (
	triNone   triangle = iota // the whole product
	triALower                 // A[i][k] taken as 0 for k > i: row i sums k ≤ i
	triAUpper                 // A[i][k] taken as 0 for k < i: row i sums k ≥ i
	// triC needs only C[i][j] for j ≤ i: blocks of C wholly right of the
	// diagonal are left untouched and the entries right of it in the blocks
	// computed hold the unmasked product, for the caller to mask.
	triC
)

// matrix is an operand of triGemm: element (i, j) at s[i·rs + j·cs], so
// that a block of a packed matrix or its transpose is read in place.
type matrix[T Float] struct {
	s      []T
	rs, cs int
}

// at is the operand from element (i, j) on.
func (x matrix[T]) at(i, j int) matrix[T] { return matrix[T]{x.s[i*x.rs+j*x.cs:], x.rs, x.cs} }

// blas returns the operand as the BLAS takes it: transposed or not, and its
// leading dimension. Every operand has unit stride along one axis.
func (x matrix[T]) blas() (trans bool, ld int) {
	if x.cs == 1 {
		return false, x.rs
	}
	return true, x.cs
}

// triGemm sets the m×n matrix c (row stride ldc) to alpha·A·B + beta·c for
// A m×k and B k×n, computing only the part tri selects. scratch must hold
// triGemmLen(n, k) elements. Float32 products on CPUs with AVX-512 run the
// kernel of trigemm.h, which skips the masked part tile by tile (6 rows
// by 64 columns); the others run the BLAS in blocks of attentionBlock rows,
// the masked diagonal blocks copied into scratch.
func triGemm[T Float](tri triangle, m, n, k int, alpha T, a, b matrix[T], beta T, c []T, ldc int, scratch []T) {
	if c32, ok := any(c).([]float32); ok && directTriGemm {
		a32, b32 := any(a).(matrix[float32]), any(b).(matrix[float32])
		triGemmFloat32(tri, m, n, k, float32(alpha), a32.s, a32.rs, a32.cs, b32.s, b32.rs, b32.cs, float32(beta), c32, ldc, any(scratch).([]float32))
		return
	}
	gemm := func(m, n, k int, a, b matrix[T], beta T, c []T) {
		ta, lda := a.blas()
		tb, ldb := b.blas()
		gemmStrided(ta, tb, m, n, k, alpha, a.s, lda, b.s, ldb, beta, c, ldc)
	}
	if tri == triNone {
		gemm(m, n, k, a, b, beta, c)
		return
	}
	for r0 := 0; r0 < m; r0 += attentionBlock {
		r1 := min(r0+attentionBlock, m)
		rows := r1 - r0
		out := c[r0*ldc:]
		switch tri {
		case triC:
			gemm(rows, min(r1, n), k, a.at(r0, 0), b, beta, out)
		case triALower:
			// The full columns left of the diagonal block, then the block.
			blockBeta := beta
			if r0 > 0 {
				gemm(rows, n, r0, a.at(r0, 0), b, beta, out)
				blockBeta = 1
			}
			tri := triangleOf(scratch, a.at(r0, r0), rows, true)
			gemm(rows, n, rows, tri, b.at(r0, 0), blockBeta, out)
		case triAUpper:
			// The diagonal block, then the full columns right of it.
			tri := triangleOf(scratch, a.at(r0, r0), rows, false)
			gemm(rows, n, rows, tri, b.at(r0, 0), beta, out)
			if r1 < k {
				gemm(rows, n, k-r1, a.at(r0, r1), b.at(r1, 0), 1, out)
			}
		}
	}
}

// triangleOf copies the n×n block x into dst (row-major) with the entries
// above the diagonal (lower) or below it (!lower) set to zero.
func triangleOf[T Float](dst []T, x matrix[T], n int, lower bool) matrix[T] {
	for i := range n {
		row := dst[i*n : (i+1)*n]
		for j := range row {
			if lower && j > i || !lower && j < i {
				row[j] = 0
			} else {
				row[j] = x.s[i*x.rs+j*x.cs]
			}
		}
	}
	return matrix[T]{dst[:n*n], n, 1}
}

// triGemmLen is the scratch, in elements, that triGemm needs for a product
// of n columns and k terms.
func triGemmLen[T Float](n, k int) int {
	var zero T
	if _, ok := any(zero).(float32); ok && directTriGemm {
		return triGemmScratch(n, k)
	}
	return attentionBlock * attentionBlock
}
