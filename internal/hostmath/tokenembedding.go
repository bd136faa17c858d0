package hostmath

import "fmt"

// TokenEmbedding looks tokens up: y has one row of d = len(y)/len(ids)
// columns per token, and row r of y is row ids[r] of weight (PyTorch's
// nn.Embedding; Embedding without the positions). ids hold exact integer
// row numbers of weight; any other id is an error, and y is then left
// unwritten.
func TokenEmbedding[T Float](y, ids, weight []T) error {
	if len(ids) == 0 || len(y)%len(ids) != 0 || len(y) == 0 {
		return fmt.Errorf("token embedding: %d outputs do not split into %d rows", len(y), len(ids))
	}
	d := len(y) / len(ids)
	if len(weight)%d != 0 {
		return fmt.Errorf("token embedding: %d weights are not rows of %d", len(weight), d)
	}
	if err := checkClasses(ids, len(weight)/d); err != nil {
		return fmt.Errorf("token embedding ids: %w", err)
	}
	parallelFor(len(y), d, func(lo, hi int) {
		for o := lo; o < hi; o += d {
			copy(y[o:o+d], weight[int(ids[o/d])*d:][:d])
		}
	})
	return nil
}
