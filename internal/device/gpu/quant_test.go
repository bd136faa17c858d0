//go:build !gpuzcuda && cgo

package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"gpuz/internal/device"
	"gpuz/internal/half"
	"gpuz/internal/quant"
)

// randomWeight returns the bytes of a [n, k] weight of kind with random
// blocks: every code random, every fp16 scale (Q4_K's d and dmin too,
// Q6_K's d after its int8 scales)
// random in ±[2⁻¹⁰, 2⁻⁴], so that no quantizer is needed and every code and
// scale bit is exercised; NF4's absmax bytes random, its groups' absmaxes
// in [0.5, 2) and its offset in [0, 0.25); the float kinds hold normal
// values.
func randomWeight(r *rand.Rand, kind quant.Kind, n, k int) []byte {
	b := make([]byte, kind.Bytes(n, k))
	scale := func(at []byte) {
		v := float32(math.Ldexp(1+r.Float64(), -10+r.IntN(6)))
		if r.IntN(2) == 0 {
			v = -v
		}
		binary.LittleEndian.PutUint16(at, half.FP16FromFloat32(v))
	}
	switch kind {
	case quant.F32:
		for i := 0; i < len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(r.NormFloat64())))
		}
	case quant.F16, quant.BF16:
		to := half.FP16FromFloat32
		if kind == quant.BF16 {
			to = half.BF16FromFloat32
		}
		for i := 0; i < len(b); i += 2 {
			binary.LittleEndian.PutUint16(b[i:], to(float32(r.NormFloat64())))
		}
	case quant.NF4:
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		l := quant.NF4LayoutOf(n, k)
		for g := range l.Groups {
			binary.LittleEndian.PutUint32(b[l.GroupAbsmax+4*g:], math.Float32bits(float32(0.5+1.5*r.Float64())))
		}
		binary.LittleEndian.PutUint32(b[l.Offset:], math.Float32bits(float32(0.25*r.Float64())))
	default:
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		size := int(kind.RowBytes(kind.BlockWeights()))
		for at := 0; at < len(b); at += size {
			if kind == quant.Q6_K {
				scale(b[at+208:])
				continue
			}
			scale(b[at:])
			if kind == quant.Q4_K {
				scale(b[at+2:]) // dmin
			}
		}
	}
	return b
}

// quantWant returns y = x·Wᵀ (gw false) or dx = g·W (gw true) in float64
// from W dequantized by quant.Dequantize, and for each output the sum of
// its terms' magnitudes, which bounds float32's rounding.
func quantWant(t *testing.T, kind quant.Kind, gw bool, m, n, k int, a []float32, w []byte) (want, mag []float64) {
	wd := make([]float32, n*k)
	if err := quant.Dequantize(kind, wd, w, n, k); err != nil {
		t.Fatal(err)
	}
	if !gw {
		want, mag = make([]float64, m*n), make([]float64, m*n)
		for i := range m {
			for j := range n {
				for p := range k {
					t := float64(a[i*k+p]) * float64(wd[j*k+p])
					want[i*n+j] += t
					mag[i*n+j] += math.Abs(t)
				}
			}
		}
		return want, mag
	}
	want, mag = make([]float64, m*k), make([]float64, m*k)
	for i := range m {
		for j := range n {
			for p := range k {
				t := float64(a[i*n+j]) * float64(wd[j*k+p])
				want[i*k+p] += t
				mag[i*k+p] += math.Abs(t)
			}
		}
	}
	return want, mag
}

// callQuant runs QuantXWt (gw false) or QuantGW on kern: a is x or g, w
// the weight's bytes in a buffer of ceil(bytes/4) words, out y or dx.
func callQuant(kern device.Kernels, kind quant.Kind, gw bool, m, n, k int, a, w, out device.Buffer) {
	if gw {
		kern.QuantGW(kind, m, n, k, a, w, out)
		return
	}
	kern.QuantXWt(kind, m, n, k, a, w, out)
}

// runQuantShim runs the product on the shim in order and returns its
// output, checking that every element was written and no guard zone
// touched.
func runQuantShim(t *testing.T, order Order, kind quant.Kind, gw bool, m, n, k int, a []float32, w []byte, outLen int) []float32 {
	t.Helper()
	s := NewShim(order, 42, 1<<16)
	defer s.Free()
	ab, wb, ob := s.Alloc(len(a)), s.Alloc((len(w)+3)/4), s.Alloc(outLen)
	copy(ab.Floats(), a)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&wb.Floats()[0])), len(w)), w)
	callQuant(Dispatcher{L: s}, kind, gw, m, n, k, ab, wb, ob)
	if err := s.Err(); err != nil {
		t.Fatalf("%s: %v", order, err)
	}
	if err := s.CheckGuards(); err != nil {
		t.Fatalf("%s: %v", order, err)
	}
	out := append([]float32(nil), ob.Floats()...)
	for i, v := range out {
		if isMarker(v) {
			t.Fatalf("%s: element %d was never written", order, i)
		}
	}
	return out
}

// runQuantHost runs the product on the host device's kernels.
func runQuantHost(t *testing.T, kind quant.Kind, gw bool, m, n, k int, a []float32, w []byte, outLen int) []float32 {
	t.Helper()
	h := device.NewHost()
	ab, _ := h.Alloc(len(a))
	wb, _ := h.Alloc((len(w) + 3) / 4)
	ob, _ := h.Alloc(outLen)
	copy(device.Floats(ab), a)
	copy(device.Bytes(wb), w)
	callQuant(h.Kernels(), kind, gw, m, n, k, ab, wb, ob)
	return device.Floats(ob)
}

// quantTol is the tolerance of a float32 product against float64, relative
// to the sum of its terms' magnitudes.
const quantTol = 1e-5

// TestQuantProductsMatchDequantized checks QuantXWt and QuantGW, on the
// shim (the one-row kernels up to 4 rows, the tiled ones beyond, with
// shapes that leave tiles partial) and on the host, against W dequantized
// by quant.DequantizeRow and multiplied in float64, for every row kind,
// and the shim's results bit-identical whatever the order of its blocks
// and threads.
func TestQuantProductsMatchDequantized(t *testing.T) {
	kinds := []quant.Kind{quant.Q8_0, quant.Q4_0, quant.Q4_K, quant.Q6_K, quant.NF4, quant.F32, quant.F16, quant.BF16}
	for _, kind := range kinds {
		// k: one block, and more than a block of quant_gw_row's 256
		// columns, partly; for the floats, runs of 8 cut short.
		ks := []int{32, 320}
		switch kind {
		case quant.Q4_K, quant.Q6_K:
			ks = []int{256, 512}
		case quant.NF4:
			ks = []int{64, 320}
		case quant.F32, quant.F16, quant.BF16:
			ks = []int{5, 300}
		}
		for _, gw := range []bool{false, true} {
			op := "XWt"
			if gw {
				op = "GW"
			}
			for _, k := range ks {
				for _, s := range []struct{ m, n int }{{1, 9}, {4, 67}, {3, 1}, {5, 9}, {70, 67}} {
					name := fmt.Sprintf("%v/%s/m=%d,n=%d,k=%d", kind, op, s.m, s.n, k)
					t.Run(name, func(t *testing.T) {
						r := rand.New(rand.NewPCG(uint64(kind), uint64(s.m*1000+s.n*10+k)))
						w := randomWeight(r, kind, s.n, k)
						aLen, outLen := s.m*k, s.m*s.n
						if gw {
							aLen, outLen = s.m*s.n, s.m*k
						}
						a := make([]float32, aLen)
						for i := range a {
							a[i] = float32(r.NormFloat64())
						}
						want, mag := quantWant(t, kind, gw, s.m, s.n, k, a, w)
						host := runQuantHost(t, kind, gw, s.m, s.n, k, a, w, outLen)
						compareQuant(t, "host", host, want, mag)
						first := runQuantShim(t, Forward, kind, gw, s.m, s.n, k, a, w, outLen)
						compareQuant(t, "shim", first, want, mag)
						shuffled := runQuantShim(t, Shuffled, kind, gw, s.m, s.n, k, a, w, outLen)
						for i := range first {
							if math.Float32bits(first[i]) != math.Float32bits(shuffled[i]) {
								t.Fatalf("element %d: shuffled order %v, forward %v: the result depends on the schedule", i, shuffled[i], first[i])
							}
						}
					})
				}
			}
		}
	}
}

// compareQuant fails unless got is want within quantTol of each output's
// magnitude.
func compareQuant(t *testing.T, what string, got []float32, want, mag []float64) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= quantTol*mag[i]) {
			t.Fatalf("%s: element %d = %v, float64 %v (difference %.3g, tolerance %.3g)", what, i, got[i], want[i], d, quantTol*mag[i])
		}
	}
}

// TestQuantRejects checks that the Dispatcher records an error, rather
// than computing anything, for a kind its kernels do not decode and for
// rows that are not whole blocks.
func TestQuantRejects(t *testing.T) {
	for _, c := range []struct {
		kind quant.Kind
		k    int
	}{{quant.Kind(len(quant.Kinds)), 64}, {quant.Q4_K, 64}, {quant.NF4, 32}} {
		s := NewShim(Forward, 1, 1<<10)
		x, w, y := s.Alloc(64), s.Alloc(64), s.Alloc(4)
		Dispatcher{L: s}.QuantXWt(c.kind, 1, 4, c.k, x, w, y)
		if s.Err() == nil {
			t.Errorf("QuantXWt of a %v weight with rows of %d recorded no error", c.kind, c.k)
		}
		s.Free()
	}
}
