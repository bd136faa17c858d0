package hostmath

import "fmt"

// Embedding looks tokens up and adds their positions: y has one row of
// d = len(y)/len(ids) columns per token, and row r of y is row ids[r] of
// weight plus row r mod seq of positions, for sequences of
// seq = len(positions)/d tokens laid one after another. ids hold exact
// integer row numbers of weight.
func Embedding[T Float](y, ids, weight, positions []T) error {
	if len(ids) == 0 || len(y)%len(ids) != 0 {
		return fmt.Errorf("embedding: %d outputs do not split into %d rows", len(y), len(ids))
	}
	d := len(y) / len(ids)
	if len(weight)%d != 0 || len(positions)%d != 0 || len(positions) == 0 {
		return fmt.Errorf("embedding: weight (%d) and positions (%d) are not rows of %d", len(weight), len(positions), d)
	}
	if err := checkClasses(ids, len(weight)/d); err != nil {
		return fmt.Errorf("embedding ids: %w", err)
	}
	seq := len(positions) / d
	parallelFor(len(y), d, func(lo, hi int) {
		for o := lo; o < hi; o += d {
			r := o / d
			w, p, yr := weight[int(ids[r])*d:][:d], positions[(r%seq)*d:][:d], y[o:o+d]
			for i := range yr {
				yr[i] = w[i] + p[i]
			}
		}
	})
	return nil
}

// EmbeddingGrad sets dweight to the gradient of Embedding with respect to
// its weight given the output gradient g: every row of g added into the
// row of dweight its id selected, in token order.
func EmbeddingGrad[T Float](dweight, ids, g []T) error {
	if len(ids) == 0 || len(g)%len(ids) != 0 {
		return fmt.Errorf("embedding gradient: %d gradients do not split into %d rows", len(g), len(ids))
	}
	d := len(g) / len(ids)
	if len(dweight)%d != 0 {
		return fmt.Errorf("embedding gradient: %d weights are not rows of %d", len(dweight), d)
	}
	if err := checkClasses(ids, len(dweight)/d); err != nil {
		return fmt.Errorf("embedding ids: %w", err)
	}
	clear(dweight)
	for r, id := range ids {
		dst, src := dweight[int(id)*d:][:d], g[r*d:(r+1)*d]
		for i, v := range src {
			dst[i] += v
		}
	}
	return nil
}
