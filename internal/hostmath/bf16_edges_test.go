package hostmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gpuz/internal/half"
)

// bf16NaN is a quiet bf16 NaN.
const bf16NaN = 0x7fc0

// poisoned returns rows×ld bf16 values of random normal values for the
// first cols of each row, with every element past them (the padding of
// each row and one row more, past the slice's end) set to fill; the slice
// returned ends at the matrix's last element, its backing array goes on.
func poisoned(rng *rand.Rand, rows, cols, ld int, fill uint16) []uint16 {
	buf := make([]uint16, (rows+1)*ld)
	for i := range buf {
		buf[i] = fill
		if i/ld < rows && i%ld < cols {
			buf[i] = half.BF16FromFloat32(float32(rng.NormFloat64()))
		}
	}
	return buf[:(rows-1)*ld+cols]
}

// TestBF16ProductsReadNoFurther: the bf16 products with an odd number of
// terms pair the last term with a zero and read nothing past an operand's
// row (GemmBF16's AVX512_BF16 kernel packing a and b, the few-row kernel
// packing x and pairing W's terms, the convert path). Every element past
// each row and past the slice holds a NaN: a read of one pairs it with a
// zero, and NaN·0 is NaN. The product must be finite and equal, bit for
// bit, to the same product with zeros there.
func TestBF16ProductsReadNoFurther(t *testing.T) {
	type shape struct {
		transA, transB bool
		m, n, k, pad   int
	}
	shapes := []shape{
		// The few-row kernel (dense, x·Wᵀ, at most 32 rows).
		{false, true, 1, 1, 1, 0}, {false, true, 3, 5, 7, 0}, {false, true, 17, 45, 33, 0}, {false, true, 32, 15, 129, 0},
		// The tiled kernel, every transpose, odd k, with and without
		// padding past each row.
		{false, false, 7, 65, 3, 0}, {false, false, 7, 65, 3, 1}, {false, true, 13, 9, 5, 2},
		{true, false, 6, 64, 1, 0}, {true, false, 11, 70, 513, 1}, {true, true, 5, 17, 9, 0}, {true, true, 8, 3, 7, 3},
	}
	withPaths(t, func(path string) {
		for _, s := range shapes {
			name := fmt.Sprintf("%s %+v", path, s)
			ra, ca, rb, cb := stored(s.transA, s.transB, s.m, s.n, s.k)
			lda, ldb := ca+s.pad, cb+s.pad
			var c [2][]float32
			for i, fill := range []uint16{0, bf16NaN} {
				rng := rand.New(rand.NewPCG(uint64(s.m), uint64(s.k)))
				a, b := poisoned(rng, ra, ca, lda, fill), poisoned(rng, rb, cb, ldb, fill)
				c[i] = make([]float32, s.m*s.n)
				GemmBF16(s.transA, s.transB, s.m, s.n, s.k, 1, a, lda, b, ldb, 0, c[i], s.n)
			}
			for j := range c[0] {
				if got, want := c[1][j], c[0][j]; math.Float32bits(got) != math.Float32bits(want) || math.IsNaN(float64(got)) {
					t.Errorf("%s: c[%d] = %g with NaNs past the operands, %g with zeros: the kernel read past a row", name, j, got, want)
					break
				}
			}
		}
	})
}
