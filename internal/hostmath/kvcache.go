package hostmath

import (
	"fmt"
	"math"

	"gpuz/internal/half"
)

// KVCache describes one decoder layer's key-value cache and the new tokens
// that meet it. Attention.Seq is the number of new tokens per sequence (the
// prompt's length in prefill, 1 in decode); Context is the positions the
// cache holds; the new tokens sit at positions start … start+Seq−1, start
// given to each call. The cache's keys and values are each
// [Batch, NumKVHeads(), Context, HeadDim]: a key and value head's positions
// lie together, so that one pass over them serves every query head of its
// group. The attention of the new tokens is always causal (a new token
// sees the cache's positions up to its own), whatever Attention.Causal
// says.
type KVCache struct {
	Attention
	// Context is the positions the cache holds.
	Context int
	// Format is how the cache stores its keys and values: 0 for float32,
	// else 16 bits of that format (bf16 or fp16), two to a float32-sized
	// word (CacheWriteHalf, CacheAttendHalf). Only the devices' kernels
	// read it, to pick the functions of either storage.
	Format half.Format
}

// Validate reports sizes that do not describe a cache and new tokens at
// positions start … start+Seq−1 in it: those that Attention.Validate
// reports, a context that is not positive, a negative start, or new
// tokens past the end of the cache.
func (c KVCache) Validate(start int) error {
	if err := c.Attention.Validate(); err != nil {
		return err
	}
	if c.Context <= 0 {
		return fmt.Errorf("key-value cache of %d positions: the context must be positive", c.Context)
	}
	if start < 0 {
		return fmt.Errorf("key-value cache: new tokens at position %d: the position must not be negative", start)
	}
	if start+c.Seq > c.Context {
		return fmt.Errorf("key-value cache of %d positions cannot hold %d new tokens from position %d", c.Context, c.Seq, start)
	}
	return nil
}

// Elements is the elements of the cache's keys, and of its values:
// Batch·NumKVHeads()·Context·HeadDim.
func (c KVCache) Elements() int { return c.Batch * c.NumKVHeads() * c.Context * c.HeadDim }

// head is the offset in the cache's keys (or values) of position 0 of key
// and value head kv of sequence b.
func (c KVCache) head(b, kv int) int { return (b*c.NumKVHeads() + kv) * c.Context * c.HeadDim }

// CacheWrite copies the keys and values of the packed qkv rows
// [Batch·Seq, QKVWidth()] of the Seq new tokens of every sequence into the
// cache's keys and values ([Batch, NumKVHeads(), Context, HeadDim] each)
// at positions start … start+Seq−1. The queries are not read.
func CacheWrite[T Float](keys, values, qkv []T, c KVCache, start int) {
	newRows(qkv, c, start, func(at int, key, value []T) {
		copy(keys[at:at+len(key)], key)
		copy(values[at:at+len(value)], value)
	})
}

// newRows calls put for each new token's key and value head of every
// sequence: at is its offset in the cache's keys (and values) at its
// position, key and value its rows in the packed qkv.
func newRows[T Float](qkv []T, c KVCache, start int, put func(at int, key, value []T)) {
	ld, d, kd, dh := c.QKVWidth(), c.DModel(), c.KVWidth(), c.HeadDim
	for b := range c.Batch {
		for kv := range c.NumKVHeads() {
			base := c.head(b, kv) + start*dh
			for s := range c.Seq {
				row := qkv[(b*c.Seq+s)*ld:]
				put(base+s*dh, row[d+kv*dh:d+(kv+1)*dh], row[d+kd+kv*dh:d+kd+(kv+1)*dh])
			}
		}
	}
}

// CacheAttend sets out [Batch·Seq, DModel()] to the attention output of
// the new tokens' queries, in the packed qkv rows, against the cache's
// keys and values, new token i of a sequence seeing the cache's positions
// 0 … start+i (causal), each query head reading the key and value head
// of its group (h / KVGroup()) in place. The scores are scaled by
// Scale() = 1/√HeadDim. CacheWrite must have written the new tokens' keys
// and values first. The work is spread over the (sequence, key and value
// head) pairs; each element is computed in a fixed order whatever the
// thread count. float32 on CPUs with AVX-512, or AVX2, FMA and F16C, runs the C
// kernels of kvcache.h, which read each key and value head's positions
// once for all of its group's query heads in decode, in splits of kvSplit
// positions spread over the threads.
func CacheAttend[T Float](out, qkv, keys, values []T, c KVCache, start int) {
	if q32, ok := any(qkv).([]float32); ok && kvCacheC {
		cacheAttendFloat32(any(out).([]float32), q32, cacheFloat32(any(keys).([]float32), any(values).([]float32)), c, start)
		return
	}
	cacheAttendGo(out, qkv, keys, values, c, start, func(_ []T, row []T) []T { return row })
}

// CacheWriteHalf is CacheWrite into a cache that stores 16-bit values of
// format f: each new key and value rounded to f, nearest even, as
// package half rounds (bit for bit the CUDA kernel's rounding).
func CacheWriteHalf(keys, values []uint16, qkv []float32, c KVCache, start int, f half.Format) {
	round := half.BF16FromFloat32s
	if f == half.FP16 {
		round = half.FP16FromFloat32s
	}
	newRows(qkv, c, start, func(at int, key, value []float32) {
		round(keys[at:at+len(key)], key)
		round(values[at:at+len(value)], value)
	})
}

// CacheAttendHalf is CacheAttend against a cache that stores 16-bit
// values of format f, as CacheWriteHalf writes them: each key and value
// widened to float32 (exactly) as it is read, the scores, the softmax and
// the sums in float32. The C kernels of kvcache.h widen in registers; the
// Go kernel widens each position's row into a scratch row. Unlike
// CacheAttend's, a prefill from position 0 reads the cache too (the
// rounded keys and values), never the new tokens' float32 rows.
func CacheAttendHalf(out, qkv []float32, keys, values []uint16, c KVCache, start int, f half.Format) {
	if kvCacheC {
		cacheAttendFloat32(out, qkv, cacheHalf(keys, values, f), c, start)
		return
	}
	widen := half.BF16ToFloat32s
	if f == half.FP16 {
		widen = half.FP16ToFloat32s
	}
	cacheAttendGo(out, qkv, keys, values, c, start, func(buf []float32, row []uint16) []float32 {
		widen(buf, row)
		return buf
	})
}

// kvSplit is the positions of a split of the cache in the C kernels: a
// decode step of one sequence has a task for each kvSplit positions of
// each key and value head, enough to keep a few threads busy, and each
// row's splits are merged in order, so the result does not depend on the
// thread count.
const kvSplit = 256

// cacheAttendGo is CacheAttend in Go over a cache of elements K, each
// position's key or value read as row returns it (the row itself, or
// widened into buf, a scratch row of HeadDim): each query row's scores
// against its visible positions, their softmax (less the maximum score),
// and the probabilities' sum of the values, divided by the probabilities'
// sum.
func cacheAttendGo[T Float, K any](out, qkv []T, keys, values []K, c KVCache, start int, row func(buf []T, r []K) []T) {
	ld, d, dh, g := c.QKVWidth(), c.DModel(), c.HeadDim, c.KVGroup()
	scale := T(c.Scale())
	kvHeads := c.NumKVHeads()
	forEachTask[T](c.Batch*kvHeads, start+c.Seq+dh, func(i int, scratch []T) {
		scores, buf := scratch[:start+c.Seq], scratch[start+c.Seq:]
		b, kv := i/kvHeads, i%kvHeads
		base := c.head(b, kv)
		for m := range g {
			h := kv*g + m
			for s := range c.Seq {
				q := qkv[(b*c.Seq+s)*ld+h*dh:][:dh]
				n := start + s + 1 // the positions new token s sees
				mx := T(math.Inf(-1))
				for t := range n {
					k := row(buf, keys[base+t*dh:][:dh])
					var dot T
					for j, qj := range q {
						dot += qj * k[j]
					}
					scores[t] = scale * dot
					mx = max(mx, scores[t])
				}
				var sum T
				for t := range n {
					scores[t] = T(math.Exp(float64(scores[t] - mx)))
					sum += scores[t]
				}
				o := out[(b*c.Seq+s)*d+h*dh:][:dh]
				clear(o)
				for t := range n {
					p, v := scores[t], row(buf, values[base+t*dh:][:dh])
					for j := range o {
						o[j] += p * v[j]
					}
				}
				inv := 1 / sum
				for j := range o {
					o[j] *= inv
				}
			}
		}
	})
}
