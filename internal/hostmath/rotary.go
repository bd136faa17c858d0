package hostmath

import "fmt"

// RotaryShape is the layout of a rotary position embedding (transformers'
// apply_rotary_pos_emb, rotate_half convention) over a packed row: each row
// of Width columns is one token at position r mod SeqLen; its first Heads
// heads of HeadDim columns are rotated, the columns from Heads·HeadDim on
// are copied. The tables cos and sin are [SeqLen, HeadDim/2].
type RotaryShape struct {
	Heads, HeadDim, SeqLen, Width int
}

// Check reports why s is not a layout, or nil.
func (s RotaryShape) Check() error {
	switch {
	case s.Heads < 1 || s.SeqLen < 1:
		return fmt.Errorf("rotary: heads %d and sequence length %d must be positive", s.Heads, s.SeqLen)
	case s.HeadDim < 2 || s.HeadDim%2 != 0:
		return fmt.Errorf("rotary: head dimension %d is not a positive even number", s.HeadDim)
	case s.Width < s.Heads*s.HeadDim:
		return fmt.Errorf("rotary: rows of %d columns cannot hold %d heads of %d", s.Width, s.Heads, s.HeadDim)
	}
	return nil
}

// Rotary sets y to x with each of the first Heads heads of every row
// rotated: for the row's position s, a head's halves x1 = x[j] and
// x2 = x[j+HeadDim/2], j < HeadDim/2, become x1·cos[s][j] − x2·sin[s][j]
// and x2·cos[s][j] + x1·sin[s][j], each computed as transformers computes
// q·cos + rotate_half(q)·sin: (x1·c) + ((−x2)·s). Other columns are copied.
// The rows are split over the threads.
func Rotary[T Float](y, x, cos, sin []T, s RotaryShape) { rotate(y, x, cos, sin, s, false) }

// RotaryGrad sets dx to the gradient of Rotary with respect to x given the
// output gradient g: each head rotated by the opposite angle (the
// rotation's transpose), g1·c + g2·s and g2·c − g1·s, other columns
// passed through.
func RotaryGrad[T Float](dx, g, cos, sin []T, s RotaryShape) { rotate(dx, g, cos, sin, s, true) }

// rotate is Rotary, or with inverse the rotation by the opposite angle:
// the sines negated, which is exact, so both share one expression.
func rotate[T Float](y, x, cos, sin []T, s RotaryShape, inverse bool) {
	if s.Width == 0 {
		return
	}
	parallelFor(len(x), s.Width, func(lo, hi int) {
		if !rotateFast(y[lo:hi], x[lo:hi], cos, sin, s, lo/s.Width, inverse) {
			rotateGo(y[lo:hi], x[lo:hi], cos, sin, s, lo/s.Width, inverse)
		}
	})
}

// rotateGo is rotate's Go loop over the rows of y and x, one thread, the
// first of them row r0 of the whole; the float32 C kernel (llama.h)
// computes what it computes.
func rotateGo[T Float](y, x, cos, sin []T, s RotaryShape, r0 int, inverse bool) {
	half, rotated := s.HeadDim/2, s.Heads*s.HeadDim
	for r := 0; r < len(x); r += s.Width {
		pos := (r0 + r/s.Width) % s.SeqLen
		c, sn := cos[pos*half:(pos+1)*half], sin[pos*half:(pos+1)*half]
		xr, yr := x[r:r+s.Width], y[r:r+s.Width]
		for h := 0; h < rotated; h += s.HeadDim {
			x1, x2 := xr[h:h+half], xr[h+half:h+s.HeadDim]
			y1, y2 := yr[h:h+half], yr[h+half:h+s.HeadDim]
			for j := range half {
				sj := sn[j]
				if inverse {
					sj = -sj
				}
				y1[j] = x1[j]*c[j] + (-x2[j])*sj
				y2[j] = x2[j]*c[j] + x1[j]*sj
			}
		}
		copy(yr[rotated:], xr[rotated:])
	}
}
