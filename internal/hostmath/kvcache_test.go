package hostmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// kvCases are attentions of a prompt of Seq tokens whose cache holds a few
// positions more: SmolLM2-135M's grouping (9 query heads on 3 key and
// value heads) at its head width 64, one key and value head for four
// query heads, no grouping, several sequences, odd widths, and a prompt
// longer than the fused kernels' 64-row blocks.
var kvCases = []KVCache{
	{Attention: Attention{Batch: 1, Seq: 7, Heads: 9, HeadDim: 64, KVHeads: 3}, Context: 10},
	{Attention: Attention{Batch: 2, Seq: 5, Heads: 4, HeadDim: 3, KVHeads: 1}, Context: 5},
	{Attention: Attention{Batch: 3, Seq: 9, Heads: 2, HeadDim: 5}, Context: 12},
	{Attention: Attention{Batch: 2, Seq: 70, Heads: 6, HeadDim: 17, KVHeads: 2}, Context: 73},
	{Attention: Attention{Batch: 1, Seq: 1, Heads: 3, HeadDim: 4, KVHeads: 3}, Context: 1},
}

// causalAttention is the reference the cache's attention must reproduce:
// the causal attention of the prompt's packed rows, through
// AttentionProbs and AttentionMix in float64 and through FusedAttention in
// float32.
func causalAttention[T Float](qkv []T, c KVCache) []T {
	a := c.Attention
	a.Causal = true
	out := make([]T, a.OutLen())
	if q32, ok := any(qkv).([]float32); ok {
		FusedAttention(any(out).([]float32), nil, q32, a)
		return out
	}
	p := make([]T, a.Batch*a.Heads*a.Seq*a.Seq)
	AttentionProbs(p, qkv, a)
	AttentionMix(out, p, qkv, a)
	return out
}

// newCache returns keys and values of c's size filled with NaN, so that a
// kernel that reads a position not yet written spreads NaN into its
// output.
func newCache[T Float](c KVCache) (keys, values []T) {
	keys, values = make([]T, c.Elements()), make([]T, c.Elements())
	for i := range keys {
		keys[i], values[i] = T(math.NaN()), T(math.NaN())
	}
	return keys, values
}

// positionRows returns the packed rows of positions [t0, t1) of every
// sequence of the prompt qkv of c.Seq positions, and the cache that
// describes them as new tokens.
func positionRows[T Float](qkv []T, c KVCache, t0, t1 int) ([]T, KVCache) {
	ld := c.QKVWidth()
	var rows []T
	for b := range c.Batch {
		rows = append(rows, qkv[(b*c.Seq+t0)*ld:(b*c.Seq+t1)*ld]...)
	}
	step := c
	step.Seq = t1 - t0
	return rows, step
}

// putRows copies the output rows of the new tokens at positions [t0, t1)
// of every sequence into the prompt's output rows.
func putRows[T Float](out, rows []T, c KVCache, t0, t1 int) {
	d := c.DModel()
	for b := range c.Batch {
		copy(out[(b*c.Seq+t0)*d:(b*c.Seq+t1)*d], rows[b*(t1-t0)*d:(b+1)*(t1-t0)*d])
	}
}

// cacheInChunks runs the prompt qkv of c through the cache in chunks of
// new tokens whose first positions are starts (the first 0), each chunk
// written and then attended, and returns the prompt's output rows.
func cacheInChunks[T Float](qkv []T, c KVCache, starts []int) []T {
	keys, values := newCache[T](c)
	out := make([]T, c.OutLen())
	for i, t0 := range starts {
		t1 := c.Seq
		if i+1 < len(starts) {
			t1 = starts[i+1]
		}
		rows, step := positionRows(qkv, c, t0, t1)
		if err := step.Validate(t0); err != nil {
			panic(err)
		}
		stepOut := make([]T, step.OutLen())
		CacheWrite(keys, values, rows, step, t0)
		CacheAttend(stepOut, rows, keys, values, step, t0)
		putRows(out, stepOut, c, t0, t1)
	}
	return out
}

// chunkings are the ways TestCacheAttend feeds a prompt of s tokens
// through the cache: all at once (prefill), one token at a time (decode),
// and a prefill of half the prompt followed by decoding.
func chunkings(s int) []chunking {
	decode, mixed := make([]int, s), []int{0}
	for i := range s {
		decode[i] = i
		if i > s/2 {
			mixed = append(mixed, i)
		}
	}
	return []chunking{{"prefill", []int{0}}, {"decode", decode}, {"prefill+decode", mixed}}
}

// chunking names the first positions of the chunks of a prompt.
type chunking struct {
	name   string
	starts []int
}

// TestCacheAttend checks that writing a prompt into the cache and
// attending to it, at once, token by token or in a prefill and then token
// by token, gives the causal attention of the whole prompt: to 1e-12 of
// the largest magnitude in float64 (AttentionProbs and AttentionMix sum
// in another order), and within the fused attention's float32 tolerance,
// 2e-5, in float32. The cache starts filled with NaN, so reading a
// position not yet written shows.
func TestCacheAttend(t *testing.T) {
	for _, c := range kvCases {
		rng := rand.New(rand.NewPCG(uint64(c.Seq), uint64(c.Heads)))
		qkv := randomSlice(rng, c.Batch*c.Seq*c.QKVWidth())
		want64, want32 := causalAttention(qkv, c), causalAttention(toFloat32(qkv), c)
		for _, ch := range chunkings(c.Seq) {
			t.Run(fmt.Sprintf("%+v/%s", c, ch.name), func(t *testing.T) {
				near(t, "float64", cacheInChunks(qkv, c, ch.starts), want64, 1e-12)
				near(t, "float32", cacheInChunks(toFloat32(qkv), c, ch.starts), want32, 2e-5)
			})
		}
	}
}

// TestCacheWrite checks that CacheWrite puts each new token's key and
// value of each key and value head at its position in the cache, and
// writes nothing else.
func TestCacheWrite(t *testing.T) {
	c := KVCache{Attention: Attention{Batch: 2, Seq: 3, Heads: 6, HeadDim: 4, KVHeads: 2}, Context: 7}
	const start = 2
	ld, d, kd, dh := c.QKVWidth(), c.DModel(), c.KVWidth(), c.HeadDim
	qkv := make([]float64, c.Batch*c.Seq*ld)
	for i := range qkv {
		qkv[i] = float64(i + 1)
	}
	keys, values := make([]float64, c.Elements()), make([]float64, c.Elements())
	CacheWrite(keys, values, qkv, c, start)
	for b := range c.Batch {
		for kv := range c.NumKVHeads() {
			for p := range c.Context {
				for j := range dh {
					at := ((b*c.NumKVHeads()+kv)*c.Context+p)*dh + j
					wantK, wantV := 0.0, 0.0
					if s := p - start; s >= 0 && s < c.Seq {
						row := (b*c.Seq + s) * ld
						wantK, wantV = qkv[row+d+kv*dh+j], qkv[row+d+kd+kv*dh+j]
					}
					if keys[at] != wantK || values[at] != wantV {
						t.Fatalf("sequence %d, head %d, position %d, column %d: key %g and value %g, want %g and %g",
							b, kv, p, j, keys[at], values[at], wantK, wantV)
					}
				}
			}
		}
	}
}

// TestCacheAttendThreads checks that the output does not depend on how
// many threads share the (sequence, key and value head) pairs.
func TestCacheAttendThreads(t *testing.T) {
	defer SetThreads(Threads())
	c := KVCache{Attention: Attention{Batch: 2, Seq: 33, Heads: 8, HeadDim: 16, KVHeads: 2}, Context: 40}
	rng := rand.New(rand.NewPCG(1, 2))
	qkv := toFloat32(randomSlice(rng, c.Batch*c.Seq*c.QKVWidth()))
	SetThreads(1)
	want := cacheInChunks(qkv, c, []int{0, 20, 21})
	for _, n := range []int{2, 3, 5} {
		SetThreads(n)
		same(t, fmt.Sprintf("%d threads", n), cacheInChunks(qkv, c, []int{0, 20, 21}), want)
	}
}

// TestKVCacheValidate checks the sizes Validate accepts and rejects.
func TestKVCacheValidate(t *testing.T) {
	ok := KVCache{Attention: Attention{Batch: 1, Seq: 4, Heads: 6, HeadDim: 8, KVHeads: 2}, Context: 10}
	with := func(f func(*KVCache)) KVCache {
		c := ok
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name  string
		c     KVCache
		start int
		valid bool
	}{
		{"fits", ok, 6, true},
		{"decode at the last position", with(func(c *KVCache) { c.Seq = 1 }), 9, true},
		{"past the end", ok, 7, false},
		{"negative start", ok, -1, false},
		{"no context", with(func(c *KVCache) { c.Context = 0 }), 0, false},
		{"no tokens", with(func(c *KVCache) { c.Seq = 0 }), 0, false},
		{"heads not shared evenly", with(func(c *KVCache) { c.KVHeads = 4 }), 0, false},
	} {
		if err := tc.c.Validate(tc.start); (err == nil) != tc.valid {
			t.Errorf("%s: Validate(%d) = %v, want valid %v", tc.name, tc.start, err, tc.valid)
		}
	}
}

// TestCacheAttendFloat32C compares the float32 C kernels of kvcache.h, in
// every instruction set this CPU runs, with the Go kernel, within the
// fused attention's float32 tolerance (2e-5 of the largest magnitude; the
// C kernels add each dot product in vector lanes and take softmax.h's
// exponentials), over kvCases and contexts of several splits, in prefill,
// decode, and chunks of several new tokens after the first (heads of 64
// and 128, which the C kernels compile apart, and of other widths); and checks
// that each gives the same bits at 1, 2 and 5 threads.
func TestCacheAttendFloat32C(t *testing.T) {
	if !kvCacheC {
		t.Skip("the C kernels do not run on this CPU or in this build")
	}
	defer SetThreads(Threads())
	defer func(isa int) { kvCacheISA, kvCacheC = isa, true }(kvCacheISA)
	cases := append([]KVCache{
		{Attention: Attention{Batch: 1, Seq: 600, Heads: 9, HeadDim: 64, KVHeads: 3}, Context: 600},
		{Attention: Attention{Batch: 2, Seq: 300, Heads: 32, HeadDim: 20, KVHeads: 2}, Context: 310},
		{Attention: Attention{Batch: 1, Seq: 520, Heads: 4, HeadDim: 80, KVHeads: 4}, Context: 530},
		{Attention: Attention{Batch: 1, Seq: 270, Heads: 8, HeadDim: 128, KVHeads: 2}, Context: 270},
	}, kvCases...)
	for _, c := range cases {
		rng := rand.New(rand.NewPCG(uint64(c.Seq), uint64(c.HeadDim)))
		qkv := toFloat32(randomSlice(rng, c.Batch*c.Seq*c.QKVWidth()))
		for _, ch := range append(chunkings(c.Seq), chunking{"chunks", []int{0, c.Seq / 3, c.Seq/3 + 1, c.Seq / 2}}) {
			if !increasing(ch.starts, c.Seq) {
				continue // too few positions for these chunks
			}
			t.Run(fmt.Sprintf("%+v/%s", c, ch.name), func(t *testing.T) {
				SetThreads(1)
				kvCacheC = false
				want := cacheInChunks(qkv, c, ch.starts)
				for _, impl := range kvCacheISAs {
					if impl.isa > kvCacheBest {
						continue
					}
					kvCacheISA, kvCacheC = impl.isa, true
					SetThreads(1)
					got := cacheInChunks(qkv, c, ch.starts)
					near(t, impl.name, got, want, 2e-5)
					for _, n := range []int{2, 5} {
						SetThreads(n)
						same(t, fmt.Sprintf("%s at %d threads", impl.name, n), cacheInChunks(qkv, c, ch.starts), got)
					}
				}
			})
		}
	}
}

// increasing reports whether the first positions of chunks rise strictly
// and stay below s.
func increasing(starts []int, s int) bool {
	for i := 1; i < len(starts); i++ {
		if starts[i] <= starts[i-1] {
			return false
		}
	}
	return starts[len(starts)-1] < s
}

// BenchmarkCacheAttend times one decode step's attention over every layer
// of a model (one new token per sequence, at the last position of the
// context, each layer its own cache: together beyond the caches of the
// CPU, as in a real decode) and reports the rate at which the caches'
// keys and values are read (b.SetBytes: 2·layers·kv_heads·context·
// head_dim·4 bytes an operation). SmolLM2-135M (30 layers, 9 query heads
// on 3 key and value heads of 64) and Llama-3.2-1B (16 layers, 32 on 8 of
// 64), batch 1, contexts 576 and 2048; GB/cpu-s is the rate per CPU second
// of the process. -cpu sets the threads.
func BenchmarkCacheAttend(b *testing.B) {
	for _, m := range []struct {
		name                  string
		layers, heads, kv, dh int
	}{{"smollm2-135m", 30, 9, 3, 64}, {"llama-3.2-1b", 16, 32, 8, 64}} {
		for _, context := range []int{576, 2048} {
			c := KVCache{Attention: Attention{Batch: 1, Seq: 1, Heads: m.heads, HeadDim: m.dh, KVHeads: m.kv}, Context: context}
			rng := rand.New(rand.NewPCG(1, uint64(context)))
			keys, values := make([][]float32, m.layers), make([][]float32, m.layers)
			for i := range keys {
				keys[i], values[i] = toFloat32(randomSlice(rng, c.Elements())), toFloat32(randomSlice(rng, c.Elements()))
			}
			qkv := toFloat32(randomSlice(rng, c.QKVWidth()))
			out := make([]float32, c.OutLen())
			b.Run(fmt.Sprintf("%s/context=%d", m.name, context), func(b *testing.B) {
				bytes := 2 * m.layers * c.Elements() * 4
				b.SetBytes(int64(bytes))
				cpu := startCPU()
				for b.Loop() {
					for i := range m.layers {
						CacheAttend(out, qkv, keys[i], values[i], c, context-1)
					}
				}
				b.ReportMetric(float64(bytes)*float64(b.N)/cpu.seconds()/1e9, "GB/cpu-s")
			})
		}
	}
}
