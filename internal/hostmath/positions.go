package hostmath

// Positions is the layout of a table of learned absolute positions (GPT-2's
// wpe) as AddPositions and PositionsGrad read it: rows of Dim columns, of
// which the first SeqLen are used; token r of a batch of sequences of
// SeqLen tokens, laid one after another, takes row r mod SeqLen.
type Positions struct {
	SeqLen int // tokens per sequence, at most the table's rows
	Dim    int // columns of a row: the model's width
}

// AddPositions sets y = x + the positions: row r of y (Dim columns) is row
// r of x plus row r mod SeqLen of pos. x and y have whole rows; pos has at
// least SeqLen rows, those beyond unused. y may be x.
func AddPositions[T Float](y, x, pos []T, p Positions) {
	d := p.Dim
	if d <= 0 || p.SeqLen <= 0 {
		return
	}
	parallelFor(len(y), d, func(lo, hi int) {
		for o := lo; o < hi; o += d {
			r := o / d
			pr, xr, yr := pos[(r%p.SeqLen)*d:][:d], x[o:o+d], y[o:o+d]
			for i := range yr {
				yr[i] = xr[i] + pr[i]
			}
		}
	})
}

// PositionsGrad sets dpos (rows of Dim columns, at least SeqLen of them) to
// the gradient of AddPositions with respect to pos given the output
// gradient g: row s < SeqLen is the sum of the rows r of g with r mod
// SeqLen = s, added in increasing r (a fixed order, whatever the threads);
// the rows from SeqLen on, which AddPositions does not read, are zero.
func PositionsGrad[T Float](dpos, g []T, p Positions) {
	d := p.Dim
	if d <= 0 || p.SeqLen <= 0 {
		return
	}
	used := min(p.SeqLen*d, len(dpos))
	clear(dpos[used:])
	stride := p.SeqLen * d
	parallelFor(used, d, func(lo, hi int) {
		dst := dpos[lo:hi]
		clear(dst)
		for b := 0; b+lo < len(g); b += stride {
			src := g[b+lo:][:min(hi-lo, len(g)-b-lo)]
			for i, v := range src {
				dst[i] += v
			}
		}
	})
}
