package quant

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuz/internal/half"
)

// unhex decodes hex with spaces and newlines between bytes.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// q4kHand is the super-block of TestQuantizeVectors' Q4_K case: sub-block
// j holds (7i + j) mod 16 − j for i = 0..31, so that every sub-block spans
// exactly 15 (scale 1) above its min −j (min j).
func q4kHand() []float32 {
	x := make([]float32, 256)
	for j := range 8 {
		for i := range 32 {
			x[32*j+i] = float32((7*i+j)%16 - j)
		}
	}
	return x
}

// q4kHandCodes returns the 128 code bytes of q4kHand by ggml's Q4_K
// packing (dequantize_row_q4_K): chunk c of 32 bytes holds sub-block 2c
// in the low nibbles and 2c+1 in the high, and the codes are the
// (7i + j) mod 16 the values were built from.
func q4kHandCodes() []byte {
	qs := make([]byte, 128)
	for c := range 4 {
		for l := range 32 {
			qs[32*c+l] = byte((7*l+2*c)%16) | byte((7*l+2*c+1)%16)<<4
		}
	}
	return qs
}

// q6kHandScale is sub-block j's scale in q6kHand, in 128ths: 128 − 8j,
// negative for sub-blocks 5 and 11 (their weights' signs flipped), 0 for
// sub-block 15 (all zeros).
func q6kHandScale(j int) int {
	switch j {
	case 5, 11:
		return -(128 - 8*j)
	case 15:
		return 0
	}
	return 128 - 8*j
}

// q6kHandCode is the code q (−32..31) of weight i of sub-block j of
// q6kHand: −32 for the first weight, the only one of its magnitude, then
// (7i + 3j) mod 63 − 31.
func q6kHandCode(j, i int) int {
	if i == 0 {
		return -32
	}
	return (7*i+3*j)%63 - 31
}

// q6kHand is the super-block of TestQuantizeVectors' Q6_K case: weight i
// of sub-block j (of 16) is s_j·q with s_j = q6kHandScale(j)/128 and q =
// q6kHandCode(j, i), but with its sign flipped for a negative scale.
func q6kHand() []float32 {
	x := make([]float32, 256)
	for j := range 16 {
		s := float32(q6kHandScale(j)) / 128
		for i := range 16 {
			x[16*j+i] = abs32(s) * float32(q6kHandCode(j, i))
			if s < 0 {
				x[16*j+i] = -x[16*j+i]
			}
		}
	}
	return x
}

// q6kHandBlock returns the 210 bytes of q6kHand as block_q6_K
// (ggml-common.h) lays them out, placing each code by
// dequantize_row_q6_K's indexing: weight 128h + 32t + i (half h, quarter
// t) has its low nibble in ql[64h + 32(t mod 2) + i], low for t < 2, high
// after, and its top two bits in bits 2t, 2t+1 of qh[32h + i]. The codes
// are q + 32 (0 for the zero sub-block, whose stored scale is 0, so that
// make_qx_quants' zeros stay); the scales −128·scale_j/max_scale =
// −q6kHandScale(j) (max_scale 1); d = 1/(−128) = fp16 0xa000.
func q6kHandBlock() []byte {
	blk := make([]byte, 210)
	ql, qh := blk[:128], blk[128:192]
	for w := range 256 {
		j, i := w/16, w%16
		c := q6kHandCode(j, i) + 32
		if j == 15 {
			c = 0
		}
		h, t, p := w/128, w%128/32, w%32
		if t < 2 {
			ql[64*h+32*t+p] |= byte(c & 15)
		} else {
			ql[64*h+32*(t-2)+p] |= byte(c&15) << 4
		}
		qh[32*h+p] |= byte(c>>4) << (2 * t)
	}
	for j := range 16 {
		blk[192+j] = byte(int8(-q6kHandScale(j)))
	}
	blk[208], blk[209] = 0x00, 0xa0
	return blk
}

// nf4HandBlock is the first block of TestQuantizeVectors' NF4 case, in
// units of its absmax: the 16 levels (codes 0–15), the 15 thresholds of
// dQuantizeNF4 (a value on a threshold takes the lower code: 0–14), the
// float32 just above each threshold (codes 1–15), −0 (7), 0.5 (12) and
// sixteen zeros (7).
func nf4HandBlock() []float32 {
	p := make([]float32, 0, 64)
	p = append(p, NF4Levels[:]...)
	p = append(p, nf4Thresholds[:]...)
	for _, t := range nf4Thresholds {
		p = append(p, math.Nextafter32(t, 2))
	}
	p = append(p, float32(math.Copysign(0, -1)), 0.5)
	return append(p, make([]float32, 16)...)
}

// TestQuantizeVectors checks Quantize's bytes against blocks worked out by
// hand from the published reference quantizers, each case naming its
// source.
func TestQuantizeVectors(t *testing.T) {
	nf4 := func() []float32 {
		p := nf4HandBlock()
		x := make([]float32, 128)
		for i, v := range p {
			x[i] = 2 * v // block 0: absmax 2
			x[127-i] = v // block 1, reversed: absmax 1
		}
		return x
	}
	tests := []struct {
		name   string
		kind   Kind
		rows   int
		src    []float32
		want   string // hex
		source string
	}{
		{
			name: "q8_0 amax 127: d=1, codes roundf(x), halves away from zero",
			kind: Q8_0, rows: 1,
			src: []float32{127, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49, -0.49, 126.5, -126.5, 3, -3, 0, 64.5, -64.5,
				-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7},
			// d = 127/127 = 1: fp16 0x3c00; 1/d = 1; roundf(x).
			want:   "003c 7f 01 ff 02 fe 03 fd 00 00 7f 81 03 fd 00 41 bf f8 f9 fa fb fc fd fe ff 00 01 02 03 04 05 06 07",
			source: "ggml-quants.c quantize_row_q8_0_ref",
		},
		{
			name: "q8_0 amax 254 (negative): d=2, 1/d=0.5",
			kind: Q8_0, rows: 1,
			src: []float32{-254, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
				16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31},
			// d = 254/127 = 2: fp16 0x4000; codes roundf(x/2) = (x+1)/2 for x > 0.
			want:   "0040 81 01 01 02 02 03 03 04 04 05 05 06 06 07 07 08 08 09 09 0a 0a 0b 0b 0c 0c 0d 0d 0e 0e 0f 0f 10",
			source: "ggml-quants.c quantize_row_q8_0_ref",
		},
		{
			name: "q8_0 zeros: d=0, 1/d taken as 0",
			kind: Q8_0, rows: 1, src: make([]float32, 32),
			want:   "0000" + strings.Repeat("00", 32),
			source: "ggml-quants.c quantize_row_q8_0_ref",
		},
		{
			name: "q4_0 max −8: d=1, codes min(15, (int8)(x + 8.5)), weight j low nibble, j+16 high",
			kind: Q4_0, rows: 1,
			src: []float32{-8, 7, 0, 0.5, -0.5, 7.6, -7.5, -7.6, 1.49, -1.5, 2.5, -2.5, 3, -3, 4.25, -4.25,
				-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7},
			// d = −8/−8 = 1: fp16 0x3c00. Codes 0 15 8 9 8 15(16 clamped) 1 0 9 7 11 6 11 5 12 4,
			// then 0..15 in the high nibbles.
			want:   "003c 00 1f 28 39 48 5f 61 70 89 97 ab b6 cb d5 ec f4",
			source: "ggml-quants.c quantize_row_q4_0_ref",
		},
		{
			name: "q4_0 +8 before −8: max is the first of equal magnitudes, d=−1",
			kind: Q4_0, rows: 1,
			src: []float32{8, -8, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
				1, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			// d = 8/−8 = −1: fp16 0xbc00; 1/d = −1: codes trunc(8.5 − x): 0, 15 (16 clamped), 4, 8...; 7, 9.
			want:   "00bc 70 9f 84 88 88 88 88 88 88 88 88 88 88 88 88 88",
			source: "ggml-quants.c quantize_row_q4_0_ref",
		},
		{
			name: "q4_k sub-blocks of range 15, mins 0..7: scale 1 each, 6-bit scales 63, mins 9j",
			kind: Q4_K, rows: 1, src: q4kHand(),
			// make_qkx2_quants fits sub-block j exactly (scale 1, min j, error 0, which no
			// trial beats). max_scale 1: d = fp16(1/63) = 0x2410, ls = 63; max_min 7:
			// dmin = fp16(7/63) = 0x2f1c, lm = 9j = 0 9 18 27 36 45 54 63. Packing: bytes
			// 0–3 ls | (ls of 4–7 >> 4) << 6 = ff; bytes 4–7 lm | (lm of 4–7 >> 4) << 6 =
			// 80 89 d2 db; bytes 8–11 (ls & 15) | (lm & 15) << 4 = 4f df 6f ff. The
			// requantized codes ((x + dmin·lm)/(d·ls), rounded) are the values' own.
			want:   "1024 1c2f ffffffff 8089d2db 4fdf6fff" + hex.EncodeToString(q4kHandCodes()),
			source: "ggml-quants.c quantize_row_q4_K_ref, make_qkx2_quants, get_scale_min_k4",
		},
		{
			name: "q6_k sub-blocks s_j·q exactly: scales −128·s_j, negative d, two sub-blocks of negative scale, one of zeros",
			kind: Q6_K, rows: 1, src: q6kHand(),
			// make_qx_quants: max = −32·s_j (weight 0), iscale = 1/s_j, codes q, and Σwxq/Σwq²
			// = s_j; no trial beats it (Cauchy–Schwarz: (Σwxl)²/Σwl² ≤ Σwx², equal only for
			// l ∝ x). For a flipped sub-block max = +32·|s_j| and the scale is −|s_j|; the zero
			// sub-block returns 0 with codes 0. max_scale = s_0 = 1: iscale = −128, d =
			// fp16(−1/128) = 0xa000, scale_j = nearest(−128·scale_j) = −128·s_j (int8; +88
			// and +40 for the flipped ones), so d·scale_j = s_j exactly and every requantized
			// code is nearest(x/(d·scale_j)) = q.
			want:   hex.EncodeToString(q6kHandBlock()),
			source: "ggml-quants.c quantize_row_q6_K_ref, make_qx_quants; dequantize_row_q6_K's layout",
		},
		{
			name: "nf4 two blocks: absmax 2 and 1, offset 1.5, absmaxes ±0.5 → dynamic codes 255 and 0",
			kind: NF4, rows: 2, src: nf4(),
			// Codes of nf4HandBlock: 0..15, 0..14, 1..15, 7, 12, 7×16, first weight in the
			// high nibble; block 1 is the block reversed. Then the absmaxes' bytes:
			// offset = (2+1)/2 = 1.5; 2−1.5 = 0.5 and 1−1.5 = −0.5 over the group absmax
			// 0.5 are +1 (code 255, the value 1) and −1 (code 0, −0.99296875, the nearest);
			// the group absmax 0.5 (float32 0x3f000000); the offset 1.5 (0x3fc00000).
			want: "0123456789abcdef 0123456789abcde1 23456789abcdef7c 7777777777777777" +
				"7777777777777777 c7fedcba98765432 1edcba9876543210 fedcba9876543210" +
				"ff00 0000003f 0000c03f",
			source: "bitsandbytes functional.py quantize_4bit(nf4, 64, compress_statistics=True); csrc/kernels.cu dQuantizeNF4, dQuantize",
		},
		{
			name: "f16 and bf16 round to nearest even",
			kind: F16, rows: 1,
			src: []float32{1, 1 + 0x1p-11, 1 + 0x1p-11 + 0x1p-23, 65504, 65520, 0x1p-24, 0x1p-25, -2},
			// 1+2^-11 is halfway between 1 and 1+2^-10: even is 1.
			want:   "003c 003c 013c ff7b 007c 0100 0000 00c0",
			source: "IEEE 754 binary16, round to nearest even (ggml's GGML_FP32_TO_FP16)",
		},
		{
			name: "bf16",
			kind: BF16, rows: 1,
			src: []float32{1, 1 + 0x1p-8, 1 + 0x1p-8 + 0x1p-23, 1 + 0x3p-8, -2},
			// 1+2^-8 is halfway between 1 and 1+2^-7: even is 1; 1+3·2^-8 rounds up to 1+2^-6.
			want:   "803f 803f 813f 823f 00c0",
			source: "bfloat16, round to nearest even (ggml's GGML_FP32_TO_BF16)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cols := len(tt.src) / tt.rows
			got := make([]byte, tt.kind.Bytes(tt.rows, cols))
			if err := Quantize(tt.kind, got, tt.src, tt.rows, cols); err != nil {
				t.Fatal(err)
			}
			if want := unhex(t, tt.want); !bytes.Equal(got, want) {
				t.Errorf("%v (%s):\n got %x\nwant %x", tt.kind, tt.source, got, want)
			}
		})
	}
}

// TestQuantizeGGML checks Quantize against bytes written by ggml's own
// reference quantizers (testdata/README.md says how they were made) for
// 4096 weights of varied kinds: weight-like normals, test-quantize-fns'
// cosines, exact halves, blocks of zeros, constants, outliers and
// denormal scales, sub-blocks of ranges 2^-4 to 2^3.
func TestQuantizeGGML(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "ggml_input.f32"))
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, len(raw)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	const rows, cols = 4, 1024
	for _, k := range []Kind{Q8_0, Q4_0, Q4_K, Q6_K} {
		t.Run(k.String(), func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", "ggml_"+k.String()+".bin"))
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, k.Bytes(rows, cols))
			if err := Quantize(k, got, x, rows, cols); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d bytes, ggml wrote %d", len(got), len(want))
			}
			bb := k.blockBytes()
			bad := 0
			for b := 0; b < len(got)/bb; b++ {
				g, w := got[b*bb:(b+1)*bb], want[b*bb:(b+1)*bb]
				if !bytes.Equal(g, w) {
					if bad++; bad <= 3 {
						t.Errorf("block %d (weights %d–%d):\n got %x\nwant %x", b, b*k.BlockWeights(), (b+1)*k.BlockWeights()-1, g, w)
					}
				}
			}
			if bad > 3 {
				t.Errorf("%d blocks of %d differ", bad, len(got)/bb)
			}
		})
	}
}

// TestQuantizationError checks the round trip's error on ggml's synthetic
// data against ggml's own bound: test-quantize-fns' total error,
// sqrt(Σ(x − x̂)²)/n over 4096 values 0.1 + 2·cos(i), below
// MAX_QUANTIZATION_TOTAL_ERROR = 0.002.
func TestQuantizationError(t *testing.T) {
	const n = 32 * 128
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(0.1 + 2*float64(float32(math.Cos(float64(float32(i))))))
	}
	for _, k := range []Kind{Q8_0, Q4_0, Q4_K, Q6_K} {
		q := make([]byte, k.Bytes(1, n))
		y := make([]float32, n)
		if err := Quantize(k, q, x, 1, n); err != nil {
			t.Fatal(err)
		}
		if err := Dequantize(k, y, q, 1, n); err != nil {
			t.Fatal(err)
		}
		var sum float64
		for i := range x {
			d := float64(x[i]) - float64(y[i])
			sum += d * d
		}
		if e := math.Sqrt(sum) / n; !(e < 0.002) {
			t.Errorf("%v: total quantization error %g, ggml's bound 0.002", k, e)
		}
	}
}

// TestRoundTrip quantizes random weights and checks each dequantized
// weight against its kind's bound, worked out from the format: Q8_0 half
// a step (d = amax/127) plus the fp16 rounding of d times the code; Q4_0
// the same with codes −8..7, but a whole step for the weights the clamp
// at 15 cuts (x/d above 7.5); Q4_K the nearest of the sub-block's 16
// levels d·sc·q − dmin·m, as stored; Q6_K the nearest of its sub-block's
// 64 levels d·sc·(q − 32); the floats their own rounding.
func TestRoundTrip(t *testing.T) {
	const rows, cols = 3, 512
	r := rand.New(rand.NewPCG(7, 8))
	x := make([]float32, rows*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64() * math.Exp2(float64(i/256%5)-2))
	}
	for _, k := range []Kind{F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K} {
		t.Run(k.String(), func(t *testing.T) {
			q := make([]byte, k.Bytes(rows, cols))
			y := make([]float32, rows*cols)
			if err := Quantize(k, q, x, rows, cols); err != nil {
				t.Fatal(err)
			}
			if err := Dequantize(k, y, q, rows, cols); err != nil {
				t.Fatal(err)
			}
			rb := int(k.RowBytes(cols))
			for i := range x {
				bound := roundTripBound(k, x, q[i/cols*rb:(i/cols+1)*rb], i%cols, i-i%cols)
				if e := math.Abs(float64(x[i]) - float64(y[i])); !(e <= bound) {
					t.Fatalf("weight %d: %g came back %g, error %g over the bound %g", i, x[i], y[i], e, bound)
				}
			}
		})
	}
}

// roundTripBound returns the largest error kind k may make on weight j of
// the row starting at x[base], stored in row.
func roundTripBound(k Kind, x []float32, row []byte, j, base int) float64 {
	v := float64(x[base+j])
	tiny := 1e-6 * math.Abs(v)
	switch k {
	case F32:
		return 0
	case F16:
		return math.Abs(v)*0x1p-11 + 0x1p-25
	case BF16:
		return math.Abs(v) * 0x1p-8
	case Q8_0, Q4_0:
		b := j / 32
		blk := x[base+32*b : base+32*b+32]
		var amax, mx float64
		for _, w := range blk {
			if math.Abs(float64(w)) > amax {
				amax, mx = math.Abs(float64(w)), float64(w)
			}
		}
		bb := k.blockBytes()
		d16 := float64(fp16(row[bb*b:]))
		if k == Q8_0 {
			d := amax / 127
			return d/2 + 127*math.Abs(d-d16) + tiny + 1e-6*d
		}
		d := mx / -8
		if d == 0 {
			return 0
		}
		step := 0.5
		if v/d > 7.5 {
			step = 1
		}
		return step*math.Abs(d) + 8*math.Abs(math.Abs(d)-math.Abs(d16)) + tiny + 1e-6*math.Abs(d)
	case Q4_K:
		blk := row[144*(j/256):]
		sc, m := ScaleMinK4(j%256/32, blk[4:16])
		d := float64(fp16(blk)) * float64(sc)
		mn := float64(fp16(blk[2:])) * float64(m)
		best := math.Inf(1)
		for q := range 16 {
			best = min(best, math.Abs(v-(d*float64(q)-mn)))
		}
		return best + 1e-5*(math.Abs(v)+mn+15*d)
	case Q6_K:
		blk := row[210*(j/256):]
		ds := float64(fp16(blk[208:])) * float64(q6kScale(blk, j%256))
		best := math.Inf(1)
		for q := -32; q < 32; q++ {
			best = min(best, math.Abs(v-ds*float64(q)))
		}
		return best + 1e-5*(math.Abs(v)+32*math.Abs(ds))
	}
	panic(k)
}

// TestQuantizeRejects checks that bad shapes, lengths and values are
// errors, and that Quantize writes exactly Bytes(rows, cols) bytes.
func TestQuantizeRejects(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(-1))
	tests := []struct {
		name       string
		kind       Kind
		rows, cols int
		dst        int // len(dst) − Bytes, or the length itself when Bytes is undefined
		src        []float32
		want       string
	}{
		{"q4_0 rows of 48", Q4_0, 2, 48, 36, make([]float32, 96), "multiple of 32"},
		{"q4_k rows of 128", Q4_K, 1, 128, 72, make([]float32, 128), "multiple of 256"},
		{"q6_k rows of 320", Q6_K, 1, 320, 262, make([]float32, 320), "multiple of 256"},
		{"nf4 rows of 32", NF4, 2, 32, 45, make([]float32, 64), "multiple of 64"},
		{"no rows", Q8_0, 0, 32, 0, nil, "no elements"},
		{"dst one short", Q8_0, 2, 32, -1, make([]float32, 64), "needs 64 floats into 68 bytes"},
		{"dst one long", NF4, 1, 64, 1, make([]float32, 64), "into 41 bytes"},
		{"src one short", Q4_K, 1, 256, 0, make([]float32, 255), "got 255"},
		{"NaN", Q4_0, 2, 32, 0, with(64, 33, nan), "element (1, 1) is NaN"},
		{"infinity", NF4, 1, 64, 0, with(64, 63, inf), "element (0, 63) is -Inf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.dst
			if tt.kind.CheckShape(tt.rows, tt.cols) == nil {
				n += int(tt.kind.Bytes(tt.rows, tt.cols))
			}
			err := Quantize(tt.kind, make([]byte, n), tt.src, tt.rows, tt.cols)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Quantize: %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// Bytes is what Quantize fills: a guard byte past it stays as it was.
	for _, k := range Kinds {
		const rows, cols = 2, 512
		x := make([]float32, rows*cols)
		for i := range x {
			x[i] = float32(i%13) - 6
		}
		n := k.Bytes(rows, cols)
		buf := bytes.Repeat([]byte{0xA5}, int(n)+1)
		if err := Quantize(k, buf[:n], x, rows, cols); err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		if buf[n] != 0xA5 {
			t.Errorf("%v: Quantize wrote past Bytes", k)
		}
		if k == NF4 {
			if l := NF4LayoutOf(rows, cols); l.Offset+4 != n {
				t.Errorf("NF4 layout ends at %d, Bytes is %d", l.Offset+4, n)
			}
		}
	}
}

// with returns n zeros but for v at i.
func with(n, i int, v float32) []float32 {
	x := make([]float32, n)
	x[i] = v
	return x
}

// TestNearestInt checks ggml's nearest_int rounding: halves to even.
func TestNearestInt(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want int
	}{{0.5, 0}, {1.5, 2}, {2.5, 2}, {-0.5, 0}, {-1.5, -2}, {-2.5, -2}, {0.49999997, 0}, {14.6, 15}, {-3.7, -4}, {4194303, 4194303}} {
		if got := nearestInt(c.f); got != c.want {
			t.Errorf("nearestInt(%v) = %d, want %d", c.f, got, c.want)
		}
	}
	if got := half.FP16FromFloat32(1.0 / 63); got != 0x2410 {
		t.Errorf("fp16(1/63) = %#x, the Q4_K vector assumes 0x2410", got)
	}
}

// BenchmarkQuantize measures Quantize on a 256×4096 weight; the rate is
// in MB/s of float32 input.
func BenchmarkQuantize(b *testing.B) {
	const rows, cols = 256, 4096
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, rows*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 0.02)
	}
	for _, k := range []Kind{F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, NF4} {
		b.Run(k.String(), func(b *testing.B) {
			dst := make([]byte, k.Bytes(rows, cols))
			b.SetBytes(4 * rows * cols)
			for b.Loop() {
				if err := Quantize(k, dst, x, rows, cols); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
