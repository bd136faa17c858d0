package ops

import (
	"fmt"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/half"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
)

// CacheConfig sizes a decoder layer's key-value cache and the new tokens
// that meet it: the query heads, the key and value heads (0: as many as
// the query heads), the head size, the new tokens per sequence (Seq: the
// prompt's length in prefill, 1 in decode) and the positions the cache
// holds (Context). The batch is read off the shapes.
type CacheConfig struct {
	Heads, KVHeads, HeadDim int
	Seq, Context            int
}

// CacheWrite writes the new tokens' keys and values into a layer's
// key-value cache, for generation: inputs the cache kv [2, batch, kv heads,
// Context, HeadDim] (its keys, then its values), the packed qkv
// [batch·Seq, (Heads + 2·kv heads)·HeadDim] (after the rotary embedding)
// and the new tokens' positions pos [batch, Seq] (new token i of every
// sequence at position start + i: pos[0] is start, a runtime value, so
// that one decode graph serves every token); output the cache with positions start …
// start+Seq−1 of every sequence written from qkv's key and value columns.
//
// It overwrites its first input (OverwritesInput is 0): the engine gives
// its output the cache's own buffer, a block's state, so that a launch
// writes the new positions only; Do returns a written copy. It is forward
// only: a cache is evaluation state, with no gradient.
//
// A cache stored in 16 bits (engine.Spec.StatePrecision) is taken as
// stored (HalfOperands: the cache), its 16-bit launch rounding the new
// keys and values into it in place (device.Kernels.CacheWrite with
// KVCache.Format); the engine never widens it.
type CacheWrite struct{ CacheConfig }

// CacheAttend is the new tokens' causal attention against a layer's cache:
// inputs the packed qkv (the queries read), the cache as CacheWrite has
// written it (its output node, so that the write runs first) and the
// positions; output [batch·Seq, Heads·HeadDim], heads merged, new token i
// seeing the cache's positions 0 … start+i, each query head reading the
// key and value head of its group in place (hostmath.CacheAttend): the
// probabilities are never kept. Forward only. A 16-bit cache is read as
// stored (HalfOperands: the cache), each key and value widened as it is
// read (hostmath.CacheAttendHalf).
type CacheAttend struct{ CacheConfig }

func (CacheWrite) signature() []int  { return []int{5, 2, 2, 5} }
func (CacheAttend) signature() []int { return []int{2, 5, 2, 2} }

// overwrites is the input that CacheWrite writes in place.
func (CacheWrite) overwrites() int { return 0 }

// cacheShape is the shape of a cache of c for batch sequences.
func cacheShape(c hostmath.KVCache) tensor.Shape {
	return tensor.Shape{2, c.Batch, c.NumKVHeads(), c.Context, c.HeadDim}
}

// sizes checks the shapes of qkv, the cache and the positions against c
// and returns the cache's sizes, the batch read off qkv's rows.
func (c CacheConfig) sizes(qkv, kv, pos tensor.Shape) (hostmath.KVCache, error) {
	k := hostmath.KVCache{Attention: hostmath.Attention{Seq: c.Seq, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim, Causal: true},
		Context: c.Context}
	if c.Seq <= 0 || qkv[0]%c.Seq != 0 {
		return k, fmt.Errorf("key-value cache: %d rows of qkv are not sequences of %d new tokens", qkv[0], c.Seq)
	}
	k.Batch = qkv[0] / c.Seq
	if err := k.Validate(0); err != nil {
		return k, err
	}
	switch {
	case qkv[1] != k.QKVWidth():
		return k, fmt.Errorf("key-value cache: qkv has shape %v, want rows of %d", qkv, k.QKVWidth())
	case !kv.Eq(cacheShape(k)):
		return k, fmt.Errorf("key-value cache: the cache has shape %v, want %v", kv, cacheShape(k))
	case !pos.Eq(tensor.Shape{k.Batch, c.Seq}):
		return k, fmt.Errorf("key-value cache: positions of shape %v, want %v", pos, tensor.Shape{k.Batch, c.Seq})
	}
	return k, nil
}

func (op CacheWrite) size(in []tensor.Shape) (hostmath.KVCache, error) {
	return op.sizes(in[1], in[0], in[2])
}

func (op CacheAttend) size(in []tensor.Shape) (hostmath.KVCache, error) {
	return op.sizes(in[0], in[1], in[2])
}

func (op CacheWrite) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.size, in, cacheShape)
}

func (op CacheAttend) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.size, in, func(c hostmath.KVCache) tensor.Shape { return outShape(c.Attention) })
}

// kernel: the host math writes a copy of the cache (Do's new value); a
// launch writes the cache's buffer in place, out being the cache itself.
func (op CacheWrite) kernel() kernel {
	return kernel{hostOf(op, cacheWriteHost, cacheWriteHost), op.launch}
}

func (op CacheAttend) kernel() kernel {
	return kernel{hostOf(op, cacheAttendHost, cacheAttendHost), op.launch}
}

func (op CacheWrite) launch(d launchArgs) error {
	c, err := op.size(d.shapes)
	if err != nil {
		return err
	}
	return d.k.CacheWrite(d.out, d.args[1], d.args[2], c)
}

func (op CacheAttend) launch(d launchArgs) error {
	c, err := op.size(d.shapes)
	if err != nil {
		return err
	}
	return d.k.CacheAttend(d.out, d.args[0], d.args[1], d.args[2], c)
}

// halfOperands: the cache, taken as stored; qkv, the positions and the
// output float32.
func (CacheWrite) halfOperands() []bool  { return []bool{true, false, false} }
func (CacheAttend) halfOperands() []bool { return []bool{false, true, false} }

// launchHalf is launch on a cache of 16-bit values of format f: out is the
// cache itself, written in place.
func (op CacheWrite) launchHalf(f half.Format, d launchArgs) error {
	c, err := op.size(d.shapes)
	if err != nil {
		return err
	}
	c.Format = f
	return d.k.CacheWrite(d.out, d.args[1], d.args[2], c)
}

// launchHalf is launch against a cache of 16-bit values of format f.
func (op CacheAttend) launchHalf(f half.Format, d launchArgs) error {
	c, err := op.size(d.shapes)
	if err != nil {
		return err
	}
	c.Format = f
	return d.k.CacheAttend(d.out, d.args[0], d.args[1], d.args[2], c)
}

// cacheAt reads the cache's sizes off the shapes (size) and the first
// new token's position off the positions, pos[0], which must be an
// integer from which the new tokens fit the cache.
func cacheAt[T hostmath.Float](size func([]tensor.Shape) (hostmath.KVCache, error), shapes []tensor.Shape, pos []T) (hostmath.KVCache, int, error) {
	c, err := size(shapes)
	if err != nil {
		return c, 0, err
	}
	start := int(pos[0])
	if T(start) != pos[0] {
		return c, 0, fmt.Errorf("key-value cache: position %v is not an integer", pos[0])
	}
	return c, start, c.Validate(start)
}

// cacheWriteHost is CacheWrite's host math into a new cache: the input
// cache copied, then the new positions written.
func cacheWriteHost[T hostmath.Float](op CacheWrite, h hostArgs[T]) error {
	c, start, err := cacheAt(op.size, h.shapes, h.in[2])
	if err != nil {
		return err
	}
	copy(h.out, h.in[0])
	n := c.Elements()
	hostmath.CacheWrite(h.out[:n], h.out[n:], h.in[1], c, start)
	return nil
}

func cacheAttendHost[T hostmath.Float](op CacheAttend, h hostArgs[T]) error {
	c, start, err := cacheAt(op.size, h.shapes, h.in[2])
	if err != nil {
		return err
	}
	n := c.Elements()
	hostmath.CacheAttend(h.out, h.in[0], h.in[1][:n], h.in[1][n:], c, start)
	return nil
}

// cost: the new keys and values read and written into the cache.
func (op CacheWrite) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return sizedCost(op.size, in, func(c hostmath.KVCache) device.Cost {
		n := 4 * 2 * int64(c.Batch) * int64(c.Seq) * int64(c.KVWidth())
		return device.Cost{ReadBytes: n, WriteBytes: n}
	})
}

// cost: at the cache's end (every position seen, the most a launch
// does: the position is a runtime value), the scores q·kᵀ and the sum
// of the values (2·hd operations per position and query head each) and
// about 5 operations per score; qkv's queries and the whole cache read,
// the output written.
func (op CacheAttend) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return sizedCost(op.size, in, func(c hostmath.KVCache) device.Cost {
		scores := int64(c.Batch) * int64(c.Heads) * int64(c.Seq) * int64(c.Context)
		read := 4 * (int64(c.Batch)*int64(c.Seq)*int64(c.DModel()) + 2*int64(c.Elements()))
		return device.Cost{FLOPs: 4*scores*int64(c.HeadDim) + 5*scores, ReadBytes: read, WriteBytes: bytesOf(out)}
	})
}

// halfCost: CacheWrite's cost with the new keys and values written at 2
// bytes each (read at 4 from qkv).
func (op CacheWrite) halfCost(in []tensor.Shape, out tensor.Shape) device.Cost {
	c := op.cost(in, out)
	c.WriteBytes /= 2
	return c
}

// halfCost: CacheAttend's cost with the cache read at 2 bytes an element.
func (op CacheAttend) halfCost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return sizedCost(op.size, in, func(c hostmath.KVCache) device.Cost {
		k := op.cost(in, out)
		k.ReadBytes -= 2 * 2 * int64(c.Elements())
		return k
	})
}

// The ops compute in float32 (autocast's fp32 class): under 16-bit
// precision qkv and the output stay float32, and the cache is float32
// unless it is stored in 16 bits itself (engine.Spec.StatePrecision),
// which the ops then take as stored.
func (CacheWrite) cast() levers.Cast  { return levers.CastFP32 }
func (CacheAttend) cast() levers.Cast { return levers.CastFP32 }

// The cache's ops in the performance model: memory-bound, each reads or
// writes the cache once (perfmodel.ClassElementwise); decode's attention
// reads every cached key and value of its sequence once per token.
func (CacheWrite) class() string  { return perfmodel.ClassElementwise }
func (CacheAttend) class() string { return perfmodel.ClassElementwise }
