package hostmath

import (
	"math/rand/v2"
	"slices"
	"testing"

	"gpuz/internal/quant"
)

// TestQuantEmbedding looks up rows of random Q8_0, Q4_0, Q4_K and Q6_K tables
// against quant.Dequantize's whole table, and refuses an id out of range
// leaving the output unwritten.
func TestQuantEmbedding(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const vocab, d = 7, 512
	for _, kind := range []quant.Kind{quant.Q8_0, quant.Q4_0, quant.Q4_K, quant.Q6_K} {
		w := randomBlocks(rng, kind, vocab, d)
		table := make([]float32, vocab*d)
		if err := quant.Dequantize(kind, table, w, vocab, d); err != nil {
			t.Fatal(err)
		}
		ids := []float32{3, 0, 6, 3}
		y := make([]float32, len(ids)*d)
		if err := QuantEmbedding(kind, y, ids, w, vocab); err != nil {
			t.Fatal(err)
		}
		for r, id := range ids {
			if !slices.Equal(y[r*d:(r+1)*d], table[int(id)*d:][:d]) {
				t.Errorf("%v: row %d is not table row %v", kind, r, id)
			}
		}
		clear(y)
		if err := QuantEmbedding(kind, y, []float32{1, 7, 0, 2}, w, vocab); err == nil {
			t.Errorf("%v: id 7 of a vocabulary of 7 accepted", kind)
		}
		if slices.ContainsFunc(y, func(v float32) bool { return v != 0 }) {
			t.Errorf("%v: a refused lookup wrote its output", kind)
		}
	}
}

// randomBlocks returns a random [rows, cols] matrix of kind's blocks:
// each fp16 scale (and Q4_K's min; Q6_K's d, its last two bytes) a small
// positive half, every other byte random.
func randomBlocks(rng *rand.Rand, kind quant.Kind, rows, cols int) []byte {
	b := make([]byte, kind.Bytes(rows, cols))
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	per := kind.Bytes(1, kind.BlockWeights())
	for o := int64(0); o+per <= int64(len(b)); o += per {
		if kind == quant.Q6_K {
			b[o+208], b[o+209] = byte(rng.IntN(256)), 0x20
			continue
		}
		b[o], b[o+1] = byte(rng.IntN(256)), 0x20 // fp16 0x20xx: about 0.008 to 0.016
		if kind == quant.Q4_K {
			b[o+2], b[o+3] = byte(rng.IntN(256)), 0x20
		}
	}
	return b
}
