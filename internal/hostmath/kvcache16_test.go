package hostmath

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gpuz/internal/half"
)

// halfFormats are the 16-bit formats a cache stores.
var halfFormats = []half.Format{half.BF16, half.FP16}

// roundHalf returns x rounded to format f, as float32.
func roundHalf(f half.Format, x float32) float32 {
	if f == half.FP16 {
		return half.FP16ToFloat32(half.FP16FromFloat32(x))
	}
	return half.BF16ToFloat32(half.BF16FromFloat32(x))
}

// roundedKV returns the packed rows qkv of c's new tokens with their key
// and value columns rounded to f, the queries as they are: the rows whose
// causal attention a cache of f computes.
func roundedKV(qkv []float64, c KVCache, f half.Format) []float64 {
	out := append([]float64(nil), qkv...)
	ld, d := c.QKVWidth(), c.DModel()
	for r := range c.Batch * c.Seq {
		for j := d; j < ld; j++ {
			out[r*ld+j] = float64(roundHalf(f, float32(out[r*ld+j])))
		}
	}
	return out
}

// newHalfCache returns 16-bit keys and values of c's size filled with
// format f's NaN, so that a kernel that reads a position not yet written
// spreads NaN into its output.
func newHalfCache(c KVCache, f half.Format) (keys, values []uint16) {
	nan := uint16(0x7fc0)
	if f == half.FP16 {
		nan = 0x7e00
	}
	keys, values = make([]uint16, c.Elements()), make([]uint16, c.Elements())
	for i := range keys {
		keys[i], values[i] = nan, nan
	}
	return keys, values
}

// halfCacheInChunks is cacheInChunks through a 16-bit cache of format f.
func halfCacheInChunks(qkv []float32, c KVCache, starts []int, f half.Format) []float32 {
	keys, values := newHalfCache(c, f)
	out := make([]float32, c.OutLen())
	for i, t0 := range starts {
		t1 := c.Seq
		if i+1 < len(starts) {
			t1 = starts[i+1]
		}
		rows, step := positionRows(qkv, c, t0, t1)
		if err := step.Validate(t0); err != nil {
			panic(err)
		}
		stepOut := make([]float32, step.OutLen())
		CacheWriteHalf(keys, values, rows, step, t0, f)
		CacheAttendHalf(stepOut, rows, keys, values, step, t0, f)
		putRows(out, stepOut, c, t0, t1)
	}
	return out
}

// TestCacheWriteHalf checks that CacheWriteHalf puts each new token's key
// and value, rounded to the cache's format as package half rounds, at its
// position in the cache, and writes nothing else.
func TestCacheWriteHalf(t *testing.T) {
	c := KVCache{Attention: Attention{Batch: 2, Seq: 3, Heads: 6, HeadDim: 4, KVHeads: 2}, Context: 7}
	const start = 2
	ld, d, kd, dh := c.QKVWidth(), c.DModel(), c.KVWidth(), c.HeadDim
	rng := rand.New(rand.NewPCG(3, 4))
	qkv := toFloat32(randomSlice(rng, c.Batch*c.Seq*ld))
	for _, f := range halfFormats {
		round := half.BF16FromFloat32
		if f == half.FP16 {
			round = half.FP16FromFloat32
		}
		keys, values := make([]uint16, c.Elements()), make([]uint16, c.Elements())
		CacheWriteHalf(keys, values, qkv, c, start, f)
		for b := range c.Batch {
			for kv := range c.NumKVHeads() {
				for p := range c.Context {
					for j := range dh {
						at := ((b*c.NumKVHeads()+kv)*c.Context+p)*dh + j
						var wantK, wantV uint16
						if s := p - start; s >= 0 && s < c.Seq {
							row := (b*c.Seq + s) * ld
							wantK, wantV = round(qkv[row+d+kv*dh+j]), round(qkv[row+d+kd+kv*dh+j])
						}
						if keys[at] != wantK || values[at] != wantV {
							t.Fatalf("%v: sequence %d, head %d, position %d, column %d: key %#04x and value %#04x, want %#04x and %#04x",
								f, b, kv, p, j, keys[at], values[at], wantK, wantV)
						}
					}
				}
			}
		}
	}
}

// TestCacheAttendHalf checks the attention against a 16-bit cache, in the
// Go kernel and in the C kernels of every instruction set this CPU runs:
// a prompt written at once, token by token, or in a prefill and then
// token by token gives the causal attention, in float64, of the prompt's
// rows with their keys and values rounded to the cache's format, within
// the fused attention's float32 tolerance (2e-5 of the largest
// magnitude): the kernels widen each key and value exactly and compute in
// float32. A kernel that rounds to the other format, or reads a position
// it should not (NaN until written), fails. Each C kernel gives the same
// bits at 1, 2 and 5 threads. The cases are kvCases and contexts of
// several splits with heads of 64 and 128, which the C kernels compile
// apart, and widths that leave a tail of a vector.
func TestCacheAttendHalf(t *testing.T) {
	defer SetThreads(Threads())
	defer func(isa int, on bool) { kvCacheISA, kvCacheC = isa, on }(kvCacheISA, kvCacheC)
	cases := append([]KVCache{
		{Attention: Attention{Batch: 1, Seq: 300, Heads: 9, HeadDim: 64, KVHeads: 3}, Context: 300},
		{Attention: Attention{Batch: 1, Seq: 270, Heads: 8, HeadDim: 128, KVHeads: 2}, Context: 270},
		{Attention: Attention{Batch: 2, Seq: 20, Heads: 4, HeadDim: 20, KVHeads: 2}, Context: 24},
	}, kvCases...)
	for _, f := range halfFormats {
		for _, c := range cases {
			rng := rand.New(rand.NewPCG(uint64(c.Seq), uint64(c.HeadDim)))
			qkv := randomSlice(rng, c.Batch*c.Seq*c.QKVWidth())
			want := toFloat32(causalAttention(roundedKV(qkv, c, f), c))
			q32 := toFloat32(qkv)
			for _, ch := range chunkings(c.Seq) {
				t.Run(fmt.Sprintf("%v/%+v/%s", f, c.Attention, ch.name), func(t *testing.T) {
					SetThreads(1)
					kvCacheC = false
					near(t, "Go", halfCacheInChunks(q32, c, ch.starts, f), want, 2e-5)
					for _, impl := range kvCacheISAs {
						if impl.isa > kvCacheBest {
							continue
						}
						kvCacheISA, kvCacheC = impl.isa, true
						SetThreads(1)
						got := halfCacheInChunks(q32, c, ch.starts, f)
						near(t, impl.name, got, want, 2e-5)
						for _, n := range []int{2, 5} {
							SetThreads(n)
							same(t, fmt.Sprintf("%s at %d threads", impl.name, n), halfCacheInChunks(q32, c, ch.starts, f), got)
						}
					}
				})
			}
		}
	}
}

// BenchmarkCacheAttendHalf is BenchmarkCacheAttend against bf16 caches:
// the rate at which the caches' keys and values are read, 2 bytes an
// element (b.SetBytes: 2·layers·kv_heads·context·head_dim·2 bytes an
// operation).
func BenchmarkCacheAttendHalf(b *testing.B) {
	for _, m := range []struct {
		name                  string
		layers, heads, kv, dh int
	}{{"smollm2-135m", 30, 9, 3, 64}, {"llama-3.2-1b", 16, 32, 8, 64}} {
		for _, context := range []int{576, 2048} {
			c := KVCache{Attention: Attention{Batch: 1, Seq: 1, Heads: m.heads, HeadDim: m.dh, KVHeads: m.kv}, Context: context}
			rng := rand.New(rand.NewPCG(1, uint64(context)))
			keys, values := make([][]uint16, m.layers), make([][]uint16, m.layers)
			for i := range keys {
				keys[i], values[i] = make([]uint16, c.Elements()), make([]uint16, c.Elements())
				half.BF16FromFloat32s(keys[i], toFloat32(randomSlice(rng, c.Elements())))
				half.BF16FromFloat32s(values[i], toFloat32(randomSlice(rng, c.Elements())))
			}
			qkv := toFloat32(randomSlice(rng, c.QKVWidth()))
			out := make([]float32, c.OutLen())
			b.Run(fmt.Sprintf("%s/context=%d", m.name, context), func(b *testing.B) {
				bytes := 2 * m.layers * c.Elements() * 2
				b.SetBytes(int64(bytes))
				cpu := startCPU()
				for b.Loop() {
					for i := range m.layers {
						CacheAttendHalf(out, qkv, keys[i], values[i], c, context-1, half.BF16)
					}
				}
				b.ReportMetric(float64(bytes)*float64(b.N)/cpu.seconds()/1e9, "GB/cpu-s")
			})
		}
	}
}
