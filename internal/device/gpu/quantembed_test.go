//go:build !gpuzcuda && cgo

package gpu

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"gpuz/internal/quant"
)

// TestQuantEmbeddingShim looks rows up in random Q8_0, Q4_0, Q4_K and
// Q6_K tables on the shim: each row as quant.DequantizeRow decodes it, bit for
// bit; an id out of range is an error with nothing launched.
func TestQuantEmbeddingShim(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const vocab, d = 9, 512
	for _, kind := range []quant.Kind{quant.Q8_0, quant.Q4_0, quant.Q4_K, quant.Q6_K} {
		w := randomWeight(r, kind, vocab, d)
		ids := []float32{8, 0, 3, 3, 5}
		s := NewShim(Shuffled, 7, 1<<16)
		ib, wb, ob := s.Alloc(len(ids)), s.Alloc((len(w)+3)/4), s.Alloc(len(ids)*d)
		copy(ib.Floats(), ids)
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&wb.Floats()[0])), len(w)), w)
		if err := (Dispatcher{L: s}).QuantEmbedding(kind, ob, ib, wb, vocab); err != nil {
			t.Fatalf("%v: %v", kind, err)
		}
		if err := s.Err(); err != nil {
			t.Fatalf("%v: %v", kind, err)
		}
		rb := int(kind.RowBytes(d))
		want := make([]float32, d)
		for i, id := range ids {
			quant.DequantizeRow(kind, want, w[int(id)*rb:(int(id)+1)*rb])
			if got := ob.Floats()[i*d : (i+1)*d]; !slices.Equal(got, want) {
				t.Errorf("%v: row %d (id %v) differs from DequantizeRow's", kind, i, id)
			}
		}
		copy(ib.Floats(), []float32{1, 9, 0, 0, 0})
		if err := (Dispatcher{L: s}).QuantEmbedding(kind, ob, ib, wb, vocab); err == nil {
			t.Errorf("%v: id 9 of a vocabulary of 9 accepted", kind)
		}
		s.Free()
	}
}
