package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"gpuz/internal/half"
)

// Quantize sets dst, Bytes(rows, cols) bytes, to the [rows, cols] matrix
// src (rows·cols float32s, row-major) stored in kind k, byte for byte as
// the format's reference quantizer writes it: ggml's quantize_row_q8_0_ref,
// quantize_row_q4_0_ref, quantize_row_q4_K_ref and quantize_row_q6_K_ref
// for the ggml kinds
// (ggml-quants.c), bitsandbytes' quantize_4bit(quant_type="nf4",
// blocksize=64, compress_statistics=True) for NF4 (laid out as NF4Layout
// says; the offset is the absmaxes' mean rounded once to float32), and
// round to nearest even for f16 and bf16 (package half).
//
// The ggml quantizers compute in float32, each product and sum rounded on
// its own, as ggml's C does when its compiler fuses no multiply-add (gcc
// -ffp-contract=off; testdata/README.md): the Go code converts every
// product that feeds a sum to float32 explicitly so that no Go compiler
// fuses it either. src must be finite: a NaN or an infinity is an error
// (the reference quantizers would write garbage for it).
func Quantize(k Kind, dst []byte, src []float32, rows, cols int) error {
	if err := k.CheckShape(rows, cols); err != nil {
		return err
	}
	if int64(len(dst)) != k.Bytes(rows, cols) || len(src) != rows*cols {
		return fmt.Errorf("quant: quantizing a %d×%d %v weight needs %d floats into %d bytes, got %d into %d",
			rows, cols, k, rows*cols, k.Bytes(rows, cols), len(src), len(dst))
	}
	for i, v := range src {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("quant: quantizing a %d×%d weight to %v: element (%d, %d) is %v",
				rows, cols, k, i/cols, i%cols, v)
		}
	}
	if k == NF4 {
		quantizeNF4(dst, src)
		return nil
	}
	rb := int(k.RowBytes(cols))
	for r := range rows {
		quantizeRow(k, dst[r*rb:(r+1)*rb], src[r*cols:(r+1)*cols])
	}
	return nil
}

// blockQuantizers writes one block of each block kind but NF4 from its
// BlockWeights weights into its blockBytes bytes.
var blockQuantizers = map[Kind]func(blk []byte, x []float32){
	Q8_0: quantizeQ8_0Block, Q4_0: quantizeQ4_0Block, Q4_K: quantizeQ4KBlock, Q6_K: quantizeQ6KBlock,
}

// quantizeRow stores one row of a row kind (every kind but NF4).
func quantizeRow(k Kind, dst []byte, src []float32) {
	switch k {
	case F32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case F16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], half.FP16FromFloat32(v))
		}
	case BF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], half.BF16FromFloat32(v))
		}
	case Q8_0, Q4_0, Q4_K, Q6_K:
		quantizeBlock, n, nb := blockQuantizers[k], k.BlockWeights(), k.blockBytes()
		for b := range len(src) / n {
			quantizeBlock(dst[nb*b:nb*(b+1)], src[n*b:n*(b+1)])
		}
	default:
		panic(fmt.Sprintf("quant: quantizeRow of %v", k))
	}
}

// quantizeQ8_0Block writes one Q8_0 block of 32 weights (ggml's
// quantize_row_q8_0_ref): d = amax/127 with amax the largest magnitude,
// stored in fp16; each weight's code is roundf(x/d) (through x·(1/d), and
// 0 when d is 0), an int8.
func quantizeQ8_0Block(blk []byte, x []float32) {
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putFP16(blk, d)
	for j, v := range x {
		blk[2+j] = byte(cInt8(roundf(v * id)))
	}
}

// quantizeQ4_0Block writes one Q4_0 block of 32 weights (ggml's
// quantize_row_q4_0_ref): max is the weight of largest magnitude (the
// first of equals), d = max/−8 in fp16, and weight j's code is
// min(15, (int8)(x·(1/d) + 8.5)), truncated toward zero; byte j holds
// weight j in its low nibble and weight j+16 in its high.
func quantizeQ4_0Block(blk []byte, x []float32) {
	var amax, mx float32
	for _, v := range x {
		if amax < abs32(v) {
			amax, mx = abs32(v), v
		}
	}
	d := mx / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putFP16(blk, d)
	code := func(v float32) byte {
		return byte(min(15, int(cInt8(float32(v*id)+8.5))))
	}
	for j := range 16 {
		blk[2+j] = code(x[j]) | code(x[16+j])<<4
	}
}

// quantizeQ4KBlock writes one Q4_K super-block of 256 weights (ggml's
// quantize_row_q4_K_ref). Each sub-block of 32 gets a scale and a min
// from make_qkx2_quants (weighted by av_x + |x|, av_x the sub-block's
// root mean square); the eight scales and the eight mins are quantized to
// 6 bits against the largest of each (d = max_scale/63, dmin = max_min/63,
// both fp16) and packed as ScaleMinK4 reads them; then every weight is
// requantized against its sub-block's stored scale and min (a sub-block
// whose stored scale is 0 keeps make_qkx2_quants' codes).
func quantizeQ4KBlock(blk []byte, x []float32) {
	var (
		codes            [256]uint8
		weights          [32]float32
		scales, mins     [8]float32
		maxScale, maxMin float32
	)
	for j := range 8 {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := float32(math.Sqrt(float64(sumX2 / 32)))
		for l, v := range xs {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQKX2Quants(xs, weights[:], codes[32*j:32*j+32])
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}

	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sm := blk[4:16]
	for j := range 8 {
		ls := min(63, uint8(nearestInt(invScale*scales[j])))
		lm := min(63, uint8(nearestInt(invMin*mins[j])))
		if j < 4 {
			sm[j], sm[j+4] = ls, lm
			continue
		}
		sm[j+4] = ls&0x0F | (lm&0x0F)<<4
		sm[j-4] |= (ls >> 4) << 6
		sm[j] |= (lm >> 4) << 6
	}
	putFP16(blk, maxScale/63)
	putFP16(blk[2:], maxMin/63)

	d, dmin := fp16(blk), fp16(blk[2:])
	for j := range 8 {
		sc, m := ScaleMinK4(j, sm)
		dj := d * float32(sc)
		if dj == 0 {
			continue
		}
		mj := dmin * float32(m)
		for i, v := range x[32*j : 32*j+32] {
			codes[32*j+i] = uint8(max(0, min(15, nearestInt((v+mj)/dj))))
		}
	}

	qs := blk[16:144]
	for c := range 4 {
		lo, hi := codes[64*c:64*c+32], codes[64*c+32:64*c+64]
		for l := range 32 {
			qs[32*c+l] = lo[l] | hi[l]<<4
		}
	}
}

// makeQKX2Quants fits one Q4_K sub-block (ggml's make_qkx2_quants with
// nmax 15, rmin −1, rdelta 0.1, nstep 20 and squared error): x ≈
// scale·L − min with L in 0..15, by weighted least squares over 21 trial
// inverse scales, keeping the one of least weighted error. It writes the
// codes L and returns scale and min (min ≥ 0: the offset subtracted).
func makeQKX2Quants(x, w []float32, codes []uint8) (scale, theMin float32) {
	const (
		nmax   = 15
		rmin   = -1
		rdelta = float32(0.1)
		nstep  = 20
	)
	lo, hi := x[0], x[0]
	sumW := w[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < len(x); i++ {
		if x[i] < lo {
			lo = x[i]
		}
		if x[i] > hi {
			hi = x[i]
		}
		sumW += w[i]
		sumX += float32(w[i] * x[i])
	}
	if lo > 0 {
		lo = 0
	}
	if hi == lo {
		clear(codes)
		return 0, -lo
	}
	iscale := nmax / (hi - lo)
	scale = 1 / iscale
	var bestErr float32
	for i, v := range x {
		codes[i] = uint8(max(0, min(nmax, nearestInt(float32(iscale*(v-lo))))))
		diff := float32(float32(scale*float32(codes[i]))+lo) - v
		bestErr += float32(w[i] * float32(diff*diff))
	}
	var trial [32]uint8
	for is := 0; is <= nstep; is++ {
		iscale = (float32(rmin+float32(rdelta*float32(is))) + nmax) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := max(0, min(nmax, nearestInt(float32(iscale*(v-lo)))))
			trial[i] = uint8(l)
			wl := float32(w[i] * float32(l))
			sumL += wl
			sumL2 += float32(wl * float32(l))
			sumXL += float32(wl * v)
		}
		det := float32(sumW*sumL2) - float32(sumL*sumL)
		if !(det > 0) {
			continue
		}
		thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / det
		thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / det
		if thisMin > 0 {
			thisMin = 0
			thisScale = sumXL / sumL2
		}
		var curErr float32
		for i, v := range x {
			diff := float32(float32(thisScale*float32(trial[i]))+thisMin) - v
			curErr += float32(w[i] * float32(diff*diff))
		}
		if curErr < bestErr {
			copy(codes, trial[:len(x)])
			bestErr, scale, lo = curErr, thisScale, thisMin
		}
	}
	return scale, -lo
}

// groupMaxEps is ggml's GROUP_MAX_EPS: a sub-block or super-block whose
// largest magnitude (or scale) is below it is all zeros.
const groupMaxEps = 1e-15

// quantizeQ6KBlock writes one Q6_K super-block of 256 weights (ggml's
// quantize_row_q6_K_ref). Each sub-block of 16 gets a signed scale from
// makeQXQuants (codes −32..31, weighted by x²); the sixteen scales are
// quantized to int8 against the one of largest magnitude, max_scale (d =
// max_scale/−128 in fp16, scale j = min(127, nearest(−128·scale_j /
// max_scale))); then every weight is requantized against its sub-block's
// stored d·scale to q in −32..31 (a sub-block whose stored scale is 0
// keeps makeQXQuants' codes) and packed as q6kCode reads it, q + 32. A
// super-block whose scales are all below groupMaxEps is all zero bytes.
func quantizeQ6KBlock(blk []byte, x []float32) {
	var (
		codes                 [256]uint8
		scales                [16]float32
		maxScale, maxAbsScale float32
	)
	for j := range 16 {
		scales[j] = makeQXQuants(x[16*j:16*j+16], codes[16*j:16*j+16])
		if a := abs32(scales[j]); a > maxAbsScale {
			maxAbsScale, maxScale = a, scales[j]
		}
	}
	clear(blk)
	if maxAbsScale < groupMaxEps {
		return
	}

	iscale := -128 / maxScale
	putFP16(blk[208:], 1/iscale)
	for j := range 16 {
		blk[192+j] = byte(int8(min(127, nearestInt(float32(iscale*scales[j])))))
	}
	d := fp16(blk[208:])
	for j := range 16 {
		dj := d * float32(int8(blk[192+j]))
		if dj == 0 {
			continue
		}
		for i, v := range x[16*j : 16*j+16] {
			codes[16*j+i] = uint8(max(-32, min(31, nearestInt(v/dj))) + 32)
		}
	}

	for l, c := range codes {
		h, t, i := l/128, l%128/32, l%32
		blk[64*h+32*(t&1)+i] |= (c & 0x0F) << (4 * (t >> 1))
		blk[128+32*h+i] |= (c >> 4) << (2 * t)
	}
}

// makeQXQuants fits one Q6_K sub-block (ggml's make_qx_quants with nmax
// 32, rmse_type 1 and no importance weights): x ≈ scale·q with q in
// −32..31, first by iscale = −32/max (max the weight of largest
// magnitude, the first of equals), then by 18 trial inverse scales
// −(32 + 0.1·is)/max (is = ±1..±9), keeping the one whose least-squares
// scale Σwxq/Σwq² (w = x²) best explains x (the largest (Σwxq)²/Σwq²). It
// writes the codes q + 32 and returns the scale, 0 with codes 0 for a
// sub-block below groupMaxEps.
func makeQXQuants(x []float32, codes []uint8) float32 {
	const nmax = 32
	var mx, amax float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, mx = a, v
		}
	}
	if amax < groupMaxEps {
		clear(codes)
		return 0
	}
	code := func(iscale, v float32) int {
		return max(-nmax, min(nmax-1, nearestInt(float32(iscale*v))))
	}
	// sums returns Σwxq and Σwq² for the codes of iscale (w = x², each
	// product rounded as ggml's w*x[i]*l and w*l*l are).
	sums := func(iscale float32) (sumLX, sumL2 float32) {
		for _, v := range x {
			l := float32(code(iscale, v))
			w := float32(v * v)
			sumLX += float32(float32(w*v) * l)
			sumL2 += float32(float32(w*l) * l)
		}
		return sumLX, sumL2
	}
	setCodes := func(iscale float32) {
		for i, v := range x {
			codes[i] = uint8(code(iscale, v) + nmax)
		}
	}

	iscale := -nmax / mx
	setCodes(iscale)
	sumLX, sumL2 := sums(iscale)
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := float32(scale * sumLX)
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -float32(nmax+float32(0.1*float32(is))) / mx
		sumLX, sumL2 = sums(iscale)
		if sumL2 > 0 && float32(sumLX*sumLX) > float32(best*sumL2) {
			setCodes(iscale)
			scale = sumLX / sumL2
			best = float32(scale * sumLX)
		}
	}
	return scale
}

// nearestInt rounds f to the nearest integer, ties to even, as ggml's
// nearest_int does: adding 1.5·2^23 (12582912) leaves the rounded integer
// in the float32's low mantissa bits. ggml asserts |f| ≤ 4194303; beyond
// that it returns what the same bits give, as ggml's release builds do.
func nearestInt(f float32) int {
	v := float32(f) + 12582912
	return int(math.Float32bits(v)&0x007fffff) - 0x00400000
}

// roundf rounds f to the nearest integer, halves away from zero (C's
// roundf).
func roundf(f float32) float32 { return float32(math.Round(float64(f))) }

// cInt8 converts f to int8 as C's (int8_t) cast compiles on x86-64:
// truncated toward zero to a 32-bit int (cvttss2si, whose answer for a
// NaN or a value beyond int32 is 0x80000000) and its low byte kept. For
// the codes the quantizers write (finite, in range) it is plain
// truncation; the rest is defined only so that a block of denormal
// weights (1/d infinite) quantizes as ggml's x86 builds quantize it, to
// codes 0.
func cInt8(f float32) int8 {
	if !(f > math.MinInt32 && f < math.MaxInt32) { // NaN too
		return 0
	}
	return int8(int32(f))
}

func abs32(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ (1 << 31)) }

// putFP16 stores f at b[0:2] as a little-endian IEEE half, rounded to
// nearest even (GGML_FP32_TO_FP16).
func putFP16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, half.FP16FromFloat32(f)) }
