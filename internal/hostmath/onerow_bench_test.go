package hostmath

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gpuz/internal/half"
)

// BenchmarkOneRow times the products of a decode step, y = x·Wᵀ for m = 1
// or 4 rows of x (a token of each of m sequences) against a weight W of
// n × k, through Gemm (float32) and GemmBF16 (bf16 x and W), as the
// models call them: SmolLM2-135M's 576 → 1536 (its MLP's up projection)
// and 576 → 49152 (its head), and Llama-3.2-1B's 2048 → 8192. Each
// operation takes the next of enough copies of W to make 192 MiB, the
// STREAM triad's arrays (scripts/machine-peaks.sh), so that W comes from
// memory; b.SetBytes is W's bytes, so the MB/s read against the triad's
// bandwidth; GB/cpu-s is the rate per CPU second of the process, which says
// more on a machine shared with other work. -cpu sets the threads.
func BenchmarkOneRow(b *testing.B) {
	const footprint = 192 << 20
	rng := rand.New(rand.NewPCG(5, 6))
	for _, s := range []struct{ k, n int }{{576, 1536}, {576, 49152}, {2048, 8192}} {
		for _, dtype := range []string{"fp32", "bf16"} {
			size := 4
			if dtype == "bf16" {
				size = 2
			}
			copies := max(1, (footprint+s.n*s.k*size-1)/(s.n*s.k*size))
			w32, w16 := make([][]float32, copies), make([][]uint16, copies)
			for i := range copies {
				w := toFloat32(randomSlice(rng, s.n*s.k))
				if dtype == "fp32" {
					w32[i] = w
				} else {
					w16[i] = make([]uint16, len(w))
					half.BF16FromFloat32s(w16[i], w)
				}
			}
			for _, m := range []int{1, 4} {
				x := toFloat32(randomSlice(rng, m*s.k))
				x16 := make([]uint16, len(x))
				half.BF16FromFloat32s(x16, x)
				y := make([]float32, m*s.n)
				b.Run(fmt.Sprintf("%d-%d/%s/m=%d", s.k, s.n, dtype, m), func(b *testing.B) {
					b.SetBytes(int64(s.n * s.k * size))
					cpu := startCPU()
					i := 0
					for b.Loop() {
						if dtype == "fp32" {
							Gemm(false, true, m, s.n, s.k, 1, x, w32[i%copies], 0, y)
						} else {
							GemmBF16(false, true, m, s.n, s.k, 1, x16, s.k, w16[i%copies], s.k, 0, y, s.n)
						}
						i++
					}
					b.ReportMetric(float64(s.n*s.k*size)*float64(b.N)/cpu.seconds()/1e9, "GB/cpu-s")
				})
			}
		}
	}
}
