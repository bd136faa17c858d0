package hostmath

import (
	"fmt"

	"gpuz/internal/quant"
)

// QuantEmbedding is TokenEmbedding over a weight [vocab, d] stored in
// kind in w (kind.Bytes(vocab, d) bytes; a row kind: not NF4): row r of y
// is row ids[r] of the weight, dequantized; only the rows named are read.
// ids that are not integers in [0, vocab) are an error, and y is then left
// unwritten.
func QuantEmbedding(kind quant.Kind, y, ids []float32, w []byte, vocab int) error {
	if len(ids) == 0 || len(y)%len(ids) != 0 || len(y) == 0 {
		return fmt.Errorf("token embedding: %d outputs do not split into %d rows", len(y), len(ids))
	}
	d := len(y) / len(ids)
	if kind == quant.NF4 {
		return fmt.Errorf("token embedding: an NF4 table is not a row kind's")
	}
	if err := kind.CheckShape(vocab, d); err != nil {
		return fmt.Errorf("token embedding: %w", err)
	}
	rb := int(kind.RowBytes(d))
	if len(w) < vocab*rb {
		return fmt.Errorf("token embedding: %d bytes for a %v table of %d×%d (%d)", len(w), kind, vocab, d, vocab*rb)
	}
	if err := checkClasses(ids, vocab); err != nil {
		return fmt.Errorf("token embedding ids: %w", err)
	}
	parallelFor(len(y), d, func(lo, hi int) {
		for o := lo; o < hi; o += d {
			id := int(ids[o/d])
			quant.DequantizeRow(kind, y[o:o+d], w[id*rb:(id+1)*rb])
		}
	})
	return nil
}
