package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestNF4Thresholds checks that dQuantizeNF4's thresholds are the
// midpoints of adjacent levels (to a float32 ulp: bitsandbytes wrote them
// as decimals) and that the levels rise from −1 through 0 to 1.
func TestNF4Thresholds(t *testing.T) {
	if NF4Levels[0] != -1 || NF4Levels[7] != 0 || NF4Levels[15] != 1 {
		t.Errorf("levels 0, 7, 15 = %v, %v, %v; want −1, 0, 1", NF4Levels[0], NF4Levels[7], NF4Levels[15])
	}
	for k, th := range nf4Thresholds {
		lo, hi := NF4Levels[k], NF4Levels[k+1]
		if !(lo < th && th < hi) {
			t.Errorf("threshold %d = %v not between levels %v and %v", k, th, lo, hi)
		}
		mid := (float64(lo) + float64(hi)) / 2
		if ulp := float64(math.Nextafter32(th, 2) - th); math.Abs(float64(th)-mid) > ulp {
			t.Errorf("threshold %d = %v, midpoint %v", k, th, mid)
		}
	}
}

// TestNF4Code checks nf4Code against the nearest level, and its ties and
// non-finite inputs against dQuantizeNF4's tree (every test is x > t).
func TestNF4Code(t *testing.T) {
	for _, c := range []struct {
		x    float32
		want uint8
	}{
		{-1, 0}, {1, 15}, {0, 7}, {float32(math.Copysign(0, -1)), 7},
		{nf4Thresholds[7], 7}, {math.Nextafter32(nf4Thresholds[7], 1), 8},
		{nf4Thresholds[0], 0}, {nf4Thresholds[14], 14},
		{float32(math.NaN()), 0}, {float32(math.Inf(1)), 15}, {float32(math.Inf(-1)), 0},
		{1.5, 15}, {-1.5, 0},
	} {
		if got := nf4Code(c.x); got != c.want {
			t.Errorf("nf4Code(%v) = %d, want %d", c.x, got, c.want)
		}
	}
	for i := range 20001 {
		x := float32(i-10000) / 10000
		c := nf4Code(x)
		d := math.Abs(float64(x - NF4Levels[c]))
		for _, n := range []int{int(c) - 1, int(c) + 1} {
			if n >= 0 && n < 16 && math.Abs(float64(x-NF4Levels[n])) < d {
				t.Fatalf("nf4Code(%v) = %d (%v), but level %d (%v) is nearer", x, c, NF4Levels[c], n, NF4Levels[n])
			}
		}
	}
}

// TestDynamicCode checks createDynamicMap against values of
// bitsandbytes' create_dynamic_map() as torch printed them (the table
// INT8_CODE in mistral.rs, mistralrs-quant/src/bitsandbytes/quantize.rs,
// a dump of it): among them the ones a linspace that rounds step·i before
// adding gets wrong in the last bit (indices 20, 25, 41, 46, 208, 213).
func TestDynamicCode(t *testing.T) {
	code := DynamicCode()
	for _, c := range []struct {
		i    int
		want float32
	}{
		{0, -0.992968738079071},
		{1, -0.9789062738418579},
		{20, -0.7117187976837158},
		{25, -0.6414062976837158},
		{41, -0.4164062440395355},
		{46, -0.3460937440395355},
		{64, -0.09859374910593033},
		{126, -5.500000384017767e-07},
		{127, 0},
		{128, 5.500000384017767e-07},
		{129, 3.250000190746505e-06},
		{177, 0.062031250447034836},
		{191, 0.10703125596046448},
		{208, 0.3460937440395355},
		{213, 0.4164062440395355},
		{254, 0.992968738079071},
		{255, 1},
	} {
		if code[c.i] != c.want {
			t.Errorf("DynamicCode()[%d] = %.17g, want %.17g", c.i, code[c.i], c.want)
		}
	}
	for k := 1; k < 256; k++ {
		if !(code[k-1] < code[k]) {
			t.Fatalf("code not increasing at %d: %v, %v", k, code[k-1], code[k])
		}
	}
	for k := range 127 {
		if code[k] != -code[254-k] {
			t.Errorf("code[%d] = %v, code[%d] = %v: not symmetric", k, code[k], 254-k, code[254-k])
		}
	}
}

// TestQuantizeDynamic checks dQuantize's search: every code value maps to
// itself, ±1 to the ends, a NaN to 0, a midpoint to the even index, and
// any x to a nearest code.
func TestQuantizeDynamic(t *testing.T) {
	for k, v := range dynamicCode {
		if got := quantizeDynamic(&dynamicCode, v); got != uint8(k) {
			t.Errorf("quantizeDynamic(code[%d] = %v) = %d", k, v, got)
		}
	}
	for _, c := range []struct {
		x    float32
		want uint8
	}{{1, 255}, {-1, 0}, {float32(math.NaN()), 0}, {0.9965, 255}, {0.9964, 254}} {
		if got := quantizeDynamic(&dynamicCode, c.x); got != c.want {
			t.Errorf("quantizeDynamic(%v) = %d, want %d", c.x, got, c.want)
		}
	}
	// On a midpoint, computed as dQuantize computes it, x keeps the search's
	// last pivot, which is always even (127 ± 64 ± 32 … ± 1).
	for k := range 255 {
		mid := (dynamicCode[k] + dynamicCode[k+1]) * 0.5
		if got, want := quantizeDynamic(&dynamicCode, mid), uint8(k+k%2); got != want {
			t.Errorf("quantizeDynamic(midpoint of codes %d and %d) = %d, want %d", k, k+1, got, want)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		x := float32(r.Float64()*2 - 1)
		if r.IntN(2) == 0 {
			x *= float32(math.Pow(10, -7*r.Float64()))
		}
		q := quantizeDynamic(&dynamicCode, x)
		d := math.Abs(float64(x - dynamicCode[q]))
		for _, n := range []int{int(q) - 1, int(q) + 1} {
			if n >= 0 && n < 256 && math.Abs(float64(x-dynamicCode[n])) < d {
				t.Fatalf("quantizeDynamic(%v) = %d (%v), but %d (%v) is nearer", x, q, dynamicCode[q], n, dynamicCode[n])
			}
		}
	}
}

// TestNF4Layout checks the offsets of an NF4 tensor's parts.
func TestNF4Layout(t *testing.T) {
	for _, c := range []struct {
		rows, cols int
		want       NF4Layout
	}{
		{1, 64, NF4Layout{Blocks: 1, Groups: 1, QAbsmax: 32, GroupAbsmax: 33, Offset: 37}},
		{256, 256, NF4Layout{Blocks: 1024, Groups: 4, QAbsmax: 32768, GroupAbsmax: 33792, Offset: 33808}},
		{1, 64 * 257, NF4Layout{Blocks: 257, Groups: 2, QAbsmax: 8224, GroupAbsmax: 8481, Offset: 8489}},
	} {
		got := NF4LayoutOf(c.rows, c.cols)
		if got != c.want {
			t.Errorf("NF4LayoutOf(%d, %d) = %+v, want %+v", c.rows, c.cols, got, c.want)
		}
		if n := NF4.Bytes(c.rows, c.cols); got.Offset+4 != n {
			t.Errorf("%d×%d: layout ends at %d, Bytes %d", c.rows, c.cols, got.Offset+4, n)
		}
	}
}

// TestNF4RoundTrip quantizes normal weights over several groups (the last
// one short) and checks each weight against NF4's bound: half the widest
// gap between levels (−1 to −0.6961928, halved) times its block's absmax a,
// plus the error of a's double quantization, at most half the dynamic
// code's widest gap near ±1 (0.0140625, halved, and −1's distance to
// −0.99296875) times the group's absmax of a − offset.
func TestNF4RoundTrip(t *testing.T) {
	const rows, cols = 3, 64 * 300 // 900 blocks: groups of 256, 256, 256, 132
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, rows*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 0.02 * (1 + float64(i/6400%3)))
	}
	q := make([]byte, NF4.Bytes(rows, cols))
	y := make([]float32, len(x))
	if err := Quantize(NF4, q, x, rows, cols); err != nil {
		t.Fatal(err)
	}
	if err := Dequantize(NF4, y, q, rows, cols); err != nil {
		t.Fatal(err)
	}
	l := NF4LayoutOf(rows, cols)
	a := make([]float64, l.Blocks)
	var mean float64
	for b := range a {
		for _, v := range x[64*b : 64*b+64] {
			a[b] = max(a[b], math.Abs(float64(v)))
		}
		mean += a[b] / float64(len(a))
	}
	for b := range a {
		g := b / NF4Group
		var gmax float64
		for _, ab := range a[g*NF4Group : min((g+1)*NF4Group, len(a))] {
			gmax = max(gmax, math.Abs(ab-mean))
		}
		aErr := 0.00704*gmax + 1e-6*a[b]
		if got := float64(l.BlockAbsmax(q, int64(b))); math.Abs(got-a[b]) > aErr {
			t.Fatalf("block %d: absmax %g came back %g, over the bound %g", b, a[b], got, aErr)
		}
		bound := 0.15191*a[b] + aErr
		for i := 64 * b; i < 64*b+64; i++ {
			if e := math.Abs(float64(x[i]) - float64(y[i])); e > bound {
				t.Fatalf("weight %d: %g came back %g, error %g over the bound %g", i, x[i], y[i], e, bound)
			}
		}
	}
}

// TestNF4EqualAbsmaxes checks the corner where every block has the same
// absmax: the absmaxes less their mean are all 0, the group's absmax is
// 0, its reciprocal infinite and every scaled absmax a NaN, which
// dQuantize maps to code 0; the absmax comes back exactly (0·code[0] +
// offset), and so does a tensor of zeros.
func TestNF4EqualAbsmaxes(t *testing.T) {
	for _, scale := range []float32{1, 0} {
		x := make([]float32, 4*64)
		for i := range x {
			x[i] = scale * NF4Levels[i%16]
		}
		q := make([]byte, NF4.Bytes(4, 64))
		y := make([]float32, len(x))
		if err := Quantize(NF4, q, x, 4, 64); err != nil {
			t.Fatal(err)
		}
		if err := Dequantize(NF4, y, q, 4, 64); err != nil {
			t.Fatal(err)
		}
		for i := range x {
			if y[i] != x[i] {
				t.Fatalf("scale %v: weight %d = %v came back %v", scale, i, x[i], y[i])
			}
		}
	}
}
