package hostmath

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gpuz/internal/quant"
)

// BenchmarkQuantOneRow times the products of a decode step by a quantized
// weight, y = x·Wᵀ (xwt) and dx = g·W (gw) for one row, against Llama-3's
// 4096 × 4096 attention projections and its 4096 → 14336 MLP weight, in
// each block kind. Each operation takes the next of enough
// copies of W to make 192 MiB, the STREAM triad's arrays
// (scripts/machine-peaks.sh), so that W comes from memory; b.SetBytes is
// W's quantized bytes, so the MB/s read against the triad's bandwidth;
// GB/cpu-s is the rate per CPU second of the process. -cpu sets the
// threads.
func BenchmarkQuantOneRow(b *testing.B) {
	const footprint = 192 << 20
	rng := rand.New(rand.NewPCG(7, 8))
	for _, kind := range []quant.Kind{quant.Q8_0, quant.Q4_0, quant.Q4_K, quant.Q6_K, quant.NF4} {
		for _, s := range []struct{ k, n int }{{4096, 4096}, {4096, 14336}} {
			size := int(kind.Bytes(s.n, s.k))
			copies := max(1, (footprint+size-1)/size)
			ws := make([][]byte, copies)
			for i := range ws {
				ws[i] = randomQuantWeight(rng, kind, s.n, s.k)
			}
			x := toFloat32(randomSlice(rng, s.k))
			g := toFloat32(randomSlice(rng, s.n))
			y, dx := make([]float32, s.n), make([]float32, s.k)
			for _, op := range []string{"xwt", "gw"} {
				b.Run(fmt.Sprintf("%v/%d-%d/%s", kind, s.k, s.n, op), func(b *testing.B) {
					b.SetBytes(int64(size))
					cpu := startCPU()
					i := 0
					for b.Loop() {
						if op == "xwt" {
							QuantXWt(kind, 1, s.n, s.k, x, ws[i%copies], y)
						} else {
							QuantGW(kind, 1, s.n, s.k, g, ws[i%copies], dx)
						}
						i++
					}
					b.ReportMetric(float64(size)*float64(b.N)/cpu.seconds()/1e9, "GB/cpu-s")
				})
			}
		}
	}
}

// BenchmarkQuantManyRows times the products of 128 rows (a prefill chunk,
// a training micro-batch's tokens) by a quantized 4096 × 4096 weight,
// y = x·Wᵀ (xwt) and dx = g·W (gw), in GFLOP/s (2·m·n·k a product) to
// read against the FMA peak.
func BenchmarkQuantManyRows(b *testing.B) {
	const m, n, k = 128, 4096, 4096
	rng := rand.New(rand.NewPCG(9, 10))
	for _, kind := range []quant.Kind{quant.Q8_0, quant.Q4_0, quant.Q4_K, quant.Q6_K, quant.NF4} {
		w := randomQuantWeight(rng, kind, n, k)
		x := toFloat32(randomSlice(rng, m*k))
		g := toFloat32(randomSlice(rng, m*n))
		y, dx := make([]float32, m*n), make([]float32, m*k)
		for _, op := range []string{"xwt", "gw"} {
			b.Run(fmt.Sprintf("%v/m=%d/%s", kind, m, op), func(b *testing.B) {
				for b.Loop() {
					if op == "xwt" {
						QuantXWt(kind, m, n, k, x, w, y)
					} else {
						QuantGW(kind, m, n, k, g, w, dx)
					}
				}
				b.ReportMetric(2*m*n*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
