package half

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// format describes a 16-bit format for the reference rounding: the value
// of each positive pattern computed from the format's definition (not from
// the conversions under test), its largest finite pattern and its
// infinity's pattern.
type format struct {
	name        string
	manBits     int // stored mantissa bits
	bias        int
	maxFinite   uint16
	inf         uint16
	from        func(float32) uint16
	to          func(uint16) float32
	fromSlice   func([]uint16, []float32)
	toSlice     func([]float32, []uint16)
	isNaN       func(uint16) bool
	quietNaNBit uint16
}

var formats = []format{
	{"bf16", 7, 127, 0x7f7f, 0x7f80, BF16FromFloat32, BF16ToFloat32, BF16FromFloat32s, BF16ToFloat32s,
		func(h uint16) bool { return h&0x7fff > 0x7f80 }, 0x0040},
	{"fp16", 10, 15, 0x7bff, 0x7c00, FP16FromFloat32, FP16ToFloat32, FP16FromFloat32s, FP16ToFloat32s,
		func(h uint16) bool { return h&0x7fff > 0x7c00 }, 0x0200},
}

// value is the exact value of the positive pattern p (at most f.inf, whose
// value is taken as the next step past the largest finite value, as if the
// exponent went on), from the definition: (2^m + man)·2^(e-bias-m) for a
// normal, man·2^(1-bias-m) for a subnormal.
func (f format) value(p uint16) float64 {
	e, man := int(p>>f.manBits), int(p&(1<<f.manBits-1))
	if e == 0 {
		return math.Ldexp(float64(man), 1-f.bias-f.manBits)
	}
	return math.Ldexp(float64(1<<f.manBits+man), e-f.bias-f.manBits)
}

// reference rounds x (not NaN) to the format by searching the sorted table
// of its values for the two neighbours of |x| and comparing |x| with their
// exact midpoint, ties to the even pattern; past the infinity's step it is
// infinite.
func (f format) reference(x float32) uint16 {
	var sign uint16
	if math.Signbit(float64(x)) {
		sign = 0x8000
	}
	a := math.Abs(float64(x))
	n := int(f.inf) + 1 // patterns 0..inf
	i := sort.Search(n, func(p int) bool { return f.value(uint16(p)) >= a })
	switch {
	case i == n: // beyond the step past the largest finite value
		return sign | f.inf
	case f.value(uint16(i)) == a || i == 0:
		return sign | uint16(i)
	}
	lo, hi := uint16(i-1), uint16(i)
	mid := (f.value(lo) + f.value(hi)) / 2 // exact: neighbours differ in one unit of the last place
	switch {
	case a < mid:
		return sign | lo
	case a > mid || hi&1 == 0:
		return sign | hi
	}
	return sign | lo
}

// TestRoundTrip converts every one of the 65536 patterns to float32 and
// back: the value is the format's definition of it, and every pattern but
// a NaN comes back unchanged; a NaN comes back a NaN of the same sign.
func TestRoundTrip(t *testing.T) {
	for _, f := range formats {
		for p := range 1 << 16 {
			h := uint16(p)
			x := f.to(h)
			back := f.from(x)
			if f.isNaN(h) {
				if !math.IsNaN(float64(x)) || !f.isNaN(back) || back&0x8000 != h&0x8000 {
					t.Fatalf("%s %#04x: NaN gave %g, back %#04x", f.name, h, x, back)
				}
				if h&f.quietNaNBit != 0 && back != h {
					t.Fatalf("%s quiet NaN %#04x came back %#04x", f.name, h, back)
				}
				continue
			}
			want := f.value(h & 0x7fff)
			if h&0x7fff == f.inf {
				want = math.Inf(1)
			}
			if h&0x8000 != 0 {
				want = -want
			}
			if float64(x) != want || math.Signbit(float64(x)) != (h&0x8000 != 0) {
				t.Fatalf("%s %#04x: value %g, want %g", f.name, h, x, want)
			}
			if back != h {
				t.Fatalf("%s %#04x: to %g and back %#04x", f.name, h, x, back)
			}
		}
	}
}

// edges returns, for every positive finite pattern and its successor
// (the infinity's step included), the value, the midpoint and the float32
// values one unit of the last place either side of each, positive and
// negative, with the float32 extremes.
func (f format) edges() []float32 {
	var xs []float32
	up, down := float32(math.Inf(1)), float32(0)
	for p := uint16(0); p < f.inf; p++ {
		v := f.value(p)
		mid := float32((v + f.value(p+1)) / 2)
		for _, x := range []float32{float32(v), mid} {
			xs = append(xs, x, math.Nextafter32(x, up), math.Nextafter32(x, down))
		}
	}
	xs = append(xs, math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Inf(1)), 0x1p-126, math.Nextafter32(0x1p-126, 0))
	for _, x := range xs[:len(xs):len(xs)] {
		xs = append(xs, -x)
	}
	return xs
}

// TestFromFloat32 checks the conversion to 16 bits against the reference
// rounding on every edge of the format and on 2^18 random float32 bit
// patterns (any sign, exponent and mantissa).
func TestFromFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 16))
	for _, f := range formats {
		xs := f.edges()
		for range 1 << 18 {
			xs = append(xs, math.Float32frombits(rng.Uint32()))
		}
		bad := 0
		for _, x := range xs {
			if math.IsNaN(float64(x)) {
				continue
			}
			if got, want := f.from(x), f.reference(x); got != want {
				t.Errorf("%s(%g = %#08x) = %#04x, want %#04x", f.name, x, math.Float32bits(x), got, want)
				if bad++; bad == 10 {
					t.Fatalf("%s: too many", f.name)
				}
			}
		}
	}
}

// TestNaNStaysNaN converts NaNs whose payload lies only in the low bits,
// which a conversion that truncates the mantissa would turn into infinity.
func TestNaNStaysNaN(t *testing.T) {
	for _, f := range formats {
		for _, bits := range []uint32{0x7f80_0001, 0xff80_0001, 0x7fc0_0000, 0x7f80_1000, 0x7fff_ffff, 0xffff_ffff} {
			h := f.from(math.Float32frombits(bits))
			if !f.isNaN(h) || h&f.quietNaNBit == 0 || (h&0x8000 != 0) != (bits>>31 == 1) {
				t.Errorf("%s(NaN %#08x) = %#04x, want a quiet NaN of the same sign", f.name, bits, h)
			}
		}
	}
}

// TestSlices checks the bulk converters against the scalar ones, and that
// they leave dst beyond len(src) alone.
func TestSlices(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, 1000)
	for i := range src {
		src[i] = float32(rng.NormFloat64()) * 1000
	}
	for _, f := range formats {
		h := make([]uint16, len(src)+1)
		h[len(src)] = 0xbeef
		f.fromSlice(h, src)
		back := make([]float32, len(src)+1)
		back[len(src)] = 7
		f.toSlice(back, h[:len(src)])
		for i, x := range src {
			if h[i] != f.from(x) || back[i] != f.to(h[i]) {
				t.Fatalf("%s element %d: %#04x → %g, want %#04x → %g", f.name, i, h[i], back[i], f.from(x), f.to(f.from(x)))
			}
		}
		if h[len(src)] != 0xbeef || back[len(src)] != 7 {
			t.Errorf("%s: wrote past len(src)", f.name)
		}
	}
}

func BenchmarkConvert(b *testing.B) {
	const n = 1 << 20
	src := make([]float32, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range src {
		src[i] = float32(rng.NormFloat64())
	}
	h := make([]uint16, n)
	dst := make([]float32, n)
	for _, f := range formats {
		b.Run(f.name+"/from-float32", func(b *testing.B) {
			for b.Loop() {
				f.fromSlice(h, src)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
		b.Run(f.name+"/to-float32", func(b *testing.B) {
			for b.Loop() {
				f.toSlice(dst, h)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}
