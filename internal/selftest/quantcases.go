package selftest

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"gpuz/internal/device"
	"gpuz/internal/quant"
)

// quantCases are the products by a quantized weight and the lookup in a
// quantized table, for every quantized kind: one row (decode's kernels)
// and seven (the tiled ones), W [9, 512] (NF4's blocks running over
// rows, Q4_K's and Q6_K's super-blocks two a row).
func quantCases() []Case {
	const n, k, vocab = 9, 512, 9
	var cases []Case
	for _, kind := range []quant.Kind{quant.Q8_0, quant.Q4_0, quant.Q4_K, quant.Q6_K, quant.NF4} {
		for _, m := range []int{1, 7} {
			cases = append(cases,
				Case{Name: fmt.Sprintf("QuantXWt/%v/m=%d", kind, m),
					Bufs: func(r *rand.Rand) [][]float32 { return bufs(randn(r, m*k), quantWords(r, kind, n, k), zeros(m*n)) },
					Call: noValue(func(kk device.Kernels, b []device.Buffer) { kk.QuantXWt(kind, m, n, k, b[0], b[1], b[2]) })},
				Case{Name: fmt.Sprintf("QuantGW/%v/m=%d", kind, m),
					Bufs: func(r *rand.Rand) [][]float32 { return bufs(randn(r, m*n), quantWords(r, kind, n, k), zeros(m*k)) },
					Call: noValue(func(kk device.Kernels, b []device.Buffer) { kk.QuantGW(kind, m, n, k, b[0], b[1], b[2]) })})
		}
		if kind == quant.NF4 { // no row kind: a table is never NF4
			continue
		}
		cases = append(cases, Case{Name: fmt.Sprintf("QuantEmbedding/%v", kind),
			Bufs: func(r *rand.Rand) [][]float32 {
				return bufs(zeros(4*k), []float32{8, 0, 3, 3}, quantWords(r, kind, vocab, k))
			},
			Call: errOnly(func(kk device.Kernels, b []device.Buffer) error {
				return kk.QuantEmbedding(kind, b[0], b[1], b[2], vocab)
			})})
	}
	return cases
}

// quantWords returns a random [rows, cols] matrix quantized in kind, its
// bytes in float32 words as a device buffer holds them. The words are
// compared as any buffer's, and an infinity there reads as a host error:
// values are drawn again until no word is one.
func quantWords(r *rand.Rand, kind quant.Kind, rows, cols int) []float32 {
	b := make([]byte, (kind.Bytes(rows, cols)+3)/4*4)
	for {
		if err := quant.Quantize(kind, b[:kind.Bytes(rows, cols)], randn(r, rows*cols), rows, cols); err != nil {
			panic(fmt.Sprintf("selftest: quantizing a %v case: %v", kind, err)) // the case's own shapes: a bug here
		}
		words := make([]float32, len(b)/4)
		finite := true
		for i := range words {
			words[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			finite = finite && !math.IsInf(float64(words[i]), 0)
		}
		if finite {
			return words
		}
	}
}
