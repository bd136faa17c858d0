package hostmath

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gpuz/internal/half"
	"gpuz/internal/quant"
)

// randomQuantWeight returns a [rows, cols] weight of kind as random
// blocks: random codes and scale bytes, and fp16 scales (Q4_K's d and
// dmin, Q6_K's d after its int8 scales) of random sign between 2^-10 and 2^-4; NF4's groups' absmaxes
// between 2^-6 and 2^-2 and its offset below 1/16.
func randomQuantWeight(rng *rand.Rand, kind quant.Kind, rows, cols int) []byte {
	w := make([]byte, kind.Bytes(rows, cols))
	for i := 0; i < len(w); i += 8 {
		var word [8]byte
		binary.LittleEndian.PutUint64(word[:], rng.Uint64())
		copy(w[i:], word[:])
	}
	scale := func() uint16 {
		s := float32(math.Ldexp(1+rng.Float64(), -10+rng.IntN(6)))
		if rng.IntN(2) == 0 {
			s = -s
		}
		return half.FP16FromFloat32(s)
	}
	if kind == quant.NF4 {
		l := quant.NF4LayoutOf(rows, cols)
		for g := range l.Groups {
			putFloat32(w[l.GroupAbsmax+4*g:], float32(math.Ldexp(1+rng.Float64(), -6+rng.IntN(4))))
		}
		putFloat32(w[l.Offset:], float32(rng.Float64()/16))
		return w
	}
	block := int(kind.RowBytes(kind.BlockWeights()))
	for b := 0; b < len(w); b += block {
		if kind == quant.Q6_K {
			binary.LittleEndian.PutUint16(w[b+208:], scale())
			continue
		}
		binary.LittleEndian.PutUint16(w[b:], scale())
		if kind == quant.Q4_K {
			binary.LittleEndian.PutUint16(w[b+2:], scale())
		}
	}
	return w
}

// quantDecodeSpread is, for each of W's rows, a bound on the magnitude of
// the two terms a Q4_K weight is the difference of (d·sc·q and dmin·m:
// 63·15·|d| + 63·|dmin| over the row's super-blocks), or an NF4 block's
// absmax (code·group absmax and the offset: the largest group absmax plus
// the offset), whose roundings the kernels may make differently from the
// reference: it rounds each, the kernels may fuse them. Zero for the
// other kinds, which the kernels decode as the reference does.
func quantDecodeSpread(kind quant.Kind, w []byte, rows, cols int) []float64 {
	spread := make([]float64, rows)
	if kind == quant.NF4 {
		l := quant.NF4LayoutOf(rows, cols)
		var top float64
		for g := range l.Groups {
			top = max(top, float64(getFloat32(w[l.GroupAbsmax+4*g:])))
		}
		for j := range spread {
			spread[j] = top + float64(getFloat32(w[l.Offset:]))
		}
		return spread
	}
	if kind != quant.Q4_K {
		return spread
	}
	rb := int(kind.RowBytes(cols))
	for j := range rows {
		for b := j * rb; b < (j+1)*rb; b += 144 {
			d := math.Abs(float64(half.FP16ToFloat32(binary.LittleEndian.Uint16(w[b:]))))
			dmin := math.Abs(float64(half.FP16ToFloat32(binary.LittleEndian.Uint16(w[b+2:]))))
			spread[j] = max(spread[j], 63*15*d+63*dmin)
		}
	}
	return spread
}

// quantISAsHere lists the instruction sets of the quantized kernels that
// this build runs on this CPU: the Go loops and each set up to the best.
func quantISAsHere() []int {
	var isas []int
	for isa := quantGo; isa <= quantISA; isa++ {
		isas = append(isas, isa)
	}
	return isas
}

var quantISANames = map[int]string{quantGo: "go", quantAVX2: "avx2", quantAVX512: "avx512"}

// TestQuantProducts checks QuantXWt and QuantGW, in every instruction set
// this CPU runs, against the weight dequantized by quant.Dequantize and
// multiplied in float64: each entry within (terms + 64)·2^-24 of the sum
// of its terms' magnitudes (float32 sums in any order), plus for Q4_K
// 4·2^-24 of Σ|x|·spread (quantDecodeSpread). The shapes cover one, two
// and four rows (the few-row kernels, one worker and several) and 7, 33
// and 200 (the many-row tiles, more than one of x's tiles at 200), W's
// rows one, a few and more than a panel, its columns one block and more
// than a block of terms with a ragged end.
func TestQuantProducts(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 2))
	const u = 1.0 / (1 << 24)
	for _, kind := range []quant.Kind{quant.Q8_0, quant.Q4_0, quant.Q4_K, quant.Q6_K, quant.NF4} {
		ks := map[quant.Kind][]int{quant.Q4_K: {256, 768}, quant.Q6_K: {256, 768}, quant.NF4: {64, 576}}[kind]
		if ks == nil {
			ks = []int{32, 96, 544}
		}
		for _, k := range ks {
			for _, n := range []int{1, 37, 520} {
				w := randomQuantWeight(rng, kind, n, k)
				wf := make([]float32, n*k)
				if err := quant.Dequantize(kind, wf, w, n, k); err != nil {
					t.Fatal(err)
				}
				spread := quantDecodeSpread(kind, w, n, k)
				for _, m := range []int{1, 2, 4, 7, 33, 200} {
					if m == 200 && n != 37 {
						continue
					}
					x := toFloat32(randomSlice(rng, m*k))
					g := toFloat32(randomSlice(rng, m*n))
					// The float64 products and their bounds.
					y, yTol := make([]float64, m*n), make([]float64, m*n)
					dx, dxTol := make([]float64, m*k), make([]float64, m*k)
					for i := range m {
						for j := range n {
							var s, mag, dec float64
							for p := range k {
								xv, wv := float64(x[i*k+p]), float64(wf[j*k+p])
								s += xv * wv
								mag += math.Abs(xv * wv)
								dec += math.Abs(xv) * spread[j]
							}
							y[i*n+j], yTol[i*n+j] = s, u*(float64(k+64)*mag+4*dec)
						}
						for p := range k {
							var s, mag, dec float64
							for j := range n {
								gv, wv := float64(g[i*n+j]), float64(wf[j*k+p])
								s += gv * wv
								mag += math.Abs(gv * wv)
								dec += math.Abs(gv) * spread[j]
							}
							dx[i*k+p], dxTol[i*k+p] = s, u*(float64(n+64)*mag+4*dec)
						}
					}
					for _, isa := range quantISAsHere() {
						name := fmt.Sprintf("%v/%s/m=%d,n=%d,k=%d", kind, quantISANames[isa], m, n, k)
						was := quantISA
						quantISA = isa
						gotY, gotDX := make([]float32, m*n), make([]float32, m*k)
						for i := range gotY {
							gotY[i] = float32(math.NaN()) // every entry must be written
						}
						for i := range gotDX {
							gotDX[i] = float32(math.NaN())
						}
						QuantXWt(kind, m, n, k, x, w, gotY)
						QuantGW(kind, m, n, k, g, w, gotDX)
						quantISA = was
						checkWithin(t, name+" QuantXWt", gotY, y, yTol)
						checkWithin(t, name+" QuantGW", gotDX, dx, dxTol)
					}
				}
			}
		}
	}
}

// checkWithin fails t at the first entry of got farther from want than
// tol (or not a number).
func checkWithin(t *testing.T, name string, got []float32, want, tol []float64) {
	t.Helper()
	for i, v := range got {
		if d := math.Abs(float64(v) - want[i]); !(d <= tol[i]) {
			t.Errorf("%s: entry %d = %g, want %g within %.3g (off by %.3g)", name, i, v, want[i], tol[i], d)
			return
		}
	}
}

func getFloat32(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

func putFloat32(b []byte, f float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(f)) }
