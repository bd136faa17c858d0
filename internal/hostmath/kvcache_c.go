//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #cgo LDFLAGS: -lm
// #include "kvcache.h"
import "C"

import (
	"unsafe"

	"gpuz/internal/half"
)

// kvCacheISA is the instruction set of the C kernels of kvcache.h: the
// best the CPU has, AVX-512 or AVX2 with FMA (tests force AVX2 on a CPU
// with AVX-512).
var kvCacheISA = kvCacheBest

// kvCacheBest is the best instruction set of the C kernels that the CPU
// runs: C.GPUZ_ISA_SCALAR (0) where it runs neither.
var kvCacheBest = int(C.gpuz_kv_isa())

// kvCacheISAs lists the instruction sets of the C kernels, worst first, by
// the names CPUVector gives them.
var kvCacheISAs = []struct {
	name string
	isa  int
}{{"AVX2", C.GPUZ_ISA_AVX2}, {"AVX-512", C.GPUZ_ISA_AVX512}}

// kvCacheC reports whether the cache attention runs the C kernels (the CPU
// has AVX2, FMA and F16C, or AVX-512); elsewhere, and when tests turn it
// off, it runs the Go kernel of kvcache.go.
var kvCacheC = kvCacheISA != C.GPUZ_ISA_SCALAR

// kvRows is the most query rows of a task of the C kernels.
const kvRows = C.GPUZ_KV_RB

// kvPool keeps the splits' partial outputs, maxima and sums between calls.
var kvPool scratchPool

// kvData is a cache's keys and values as the C kernels read them: the
// addresses of their first elements, the kind of their elements
// (C.GPUZ_KV_F32 …) and its bytes.
type kvData struct {
	keys, values unsafe.Pointer
	kind         C.int
	size         int
}

// cacheFloat32 is a float32 cache's kvData.
func cacheFloat32(keys, values []float32) kvData {
	return kvData{unsafe.Pointer(unsafe.SliceData(keys)), unsafe.Pointer(unsafe.SliceData(values)), C.GPUZ_KV_F32, 4}
}

// cacheHalf is the kvData of a cache of 16-bit values of format f.
func cacheHalf(keys, values []uint16, f half.Format) kvData {
	kind := C.int(C.GPUZ_KV_BF16)
	if f == half.FP16 {
		kind = C.GPUZ_KV_FP16
	}
	return kvData{unsafe.Pointer(unsafe.SliceData(keys)), unsafe.Pointer(unsafe.SliceData(values)), kind, 2}
}

// at returns the addresses of the keys' and the values' element i.
func (d kvData) at(i int) (k, v unsafe.Pointer) {
	return unsafe.Add(d.keys, i*d.size), unsafe.Add(d.values, i*d.size)
}

// cacheAttendFloat32 is CacheAttend (and CacheAttendHalf) in the C kernels
// of kvcache.h, against the cache kv. A task
// is a block of up to kvRows of a (sequence, key and value head) pair's
// rows (its group's query heads of each new token) against a split of
// kvSplit of the cache's positions; with more than one split, a second
// pass merges each pair's splits. A prefill from position 0 is the causal
// attention of the new tokens' own rows, whose keys and values the cache
// holds: on a float32 cache it runs the fused attention's C kernels,
// blocked for many rows.
func cacheAttendFloat32(out, qkv []float32, kv kvData, c KVCache, start int) {
	if start == 0 && c.Seq > 1 && fusedAttentionC && kv.kind == C.GPUZ_KV_F32 {
		a := c.Attention
		a.Causal = true
		fusedAttentionFloat32(out, nil, qkv, a)
		return
	}
	ld, d, dh, g, kvHeads := c.QKVWidth(), c.DModel(), c.HeadDim, c.KVGroup(), c.NumKVHeads()
	scale := C.float(c.Scale())
	pairs, rows := c.Batch*kvHeads, c.Seq*g
	blocks, splits := (rows+kvRows-1)/kvRows, (start+c.Seq+kvSplit-1)/kvSplit
	// base returns the offsets of pair p's first query in qkv, of its first
	// output in out, and of its keys and values in the cache.
	base := func(p int) (q, o, at int) {
		b, h := p/kvHeads, p%kvHeads
		return b*c.Seq*ld + h*g*dh, b*c.Seq*d + h*g*dh, c.head(b, h)
	}
	if splits == 1 {
		forEachTask(pairs*blocks, kvRows*(dh+2), func(task int, scratch []float32) {
			p, r0 := task/blocks, task%blocks*kvRows
			q, o, at := base(p)
			keys, values := kv.at(at)
			acc, ml := scratch[:kvRows*dh], scratch[kvRows*dh:]
			C.gpuz_kv_attend(C.int(kvCacheISA), kv.kind, floatPtr(qkv[q:]), C.ptrdiff_t(ld), C.int(g), C.int(r0), C.int(min(r0+kvRows, rows)),
				C.int(start), keys, values, 0, C.int(start+c.Seq), C.int(dh), scale,
				floatPtr(acc), floatPtr(ml[:kvRows]), floatPtr(ml[kvRows:]), floatPtr(out[o:]), C.ptrdiff_t(d))
		})
		return
	}
	// The partial outputs are [pairs, splits, rows, dh], the maxima and the
	// sums [pairs, splits, rows] each.
	n := pairs * splits * rows
	parts := getScratch[float32](&kvPool, n*(dh+2))
	defer putScratch(&kvPool, parts)
	acc, mx, l := (*parts)[:n*dh], (*parts)[n*dh:n*(dh+1)], (*parts)[n*(dh+1):]
	forEachTask(pairs*blocks*splits, 0, func(task int, _ []float32) {
		p, r0, s := task/(blocks*splits), task/splits%blocks*kvRows, task%splits
		q, _, h := base(p)
		keys, values := kv.at(h)
		at := (p*splits+s)*rows + r0
		C.gpuz_kv_attend(C.int(kvCacheISA), kv.kind, floatPtr(qkv[q:]), C.ptrdiff_t(ld), C.int(g), C.int(r0), C.int(min(r0+kvRows, rows)),
			C.int(start), keys, values, C.int(s*kvSplit), C.int(min((s+1)*kvSplit, start+c.Seq)),
			C.int(dh), scale, floatPtr(acc[at*dh:]), floatPtr(mx[at:]), floatPtr(l[at:]), nil, 0)
	})
	forEachTask(pairs*blocks, 0, func(task int, _ []float32) {
		p, r0 := task/blocks, task%blocks*kvRows
		_, o, _ := base(p)
		at := p * splits * rows
		C.gpuz_kv_merge(C.int(splits), C.int(rows), C.int(r0), C.int(min(r0+kvRows, rows)), C.int(g), C.int(dh),
			floatPtr(acc[at*dh:]), floatPtr(mx[at:]), floatPtr(l[at:]), floatPtr(out[o:]), C.ptrdiff_t(d))
	})
}
