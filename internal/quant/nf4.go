package quant

import (
	"encoding/binary"
	"math"
	"slices"
)

// NF4Levels are the 16 values of the 4-bit NormalFloat code, indexed by
// the code: a weight with code c in a block of absmax a is NF4Levels[c]·a.
// They are bitsandbytes' table (nf4_dequantization_lut in csrc/kernels.cu,
// the same numbers as get_4bit_type("nf4") in bitsandbytes/functional.py,
// generated there by create_normal_map(offset=0.9677083,
// use_extra_value=True)): quantiles of the standard normal scaled to
// [−1, 1], with an exact 0. Read it; do not change it.
var NF4Levels = [16]float32{
	-1.0,
	-0.6961928009986877,
	-0.5250730514526367,
	-0.39491748809814453,
	-0.28444138169288635,
	-0.18477343022823334,
	-0.09105003625154495,
	0.0,
	0.07958029955625534,
	0.16093020141124725,
	0.24611230194568634,
	0.33791524171829224,
	0.44070982933044434,
	0.5626170039176941,
	0.7229568362236023,
	1.0,
}

// nf4Thresholds are the decision points of bitsandbytes' dQuantizeNF4
// (csrc/kernels.cu), as its float literals: threshold k lies between
// NF4Levels[k] and NF4Levels[k+1], their midpoint.
var nf4Thresholds = [15]float32{
	-0.8480964004993439,
	-0.6106329262256622,
	-0.4599952697753906,
	-0.33967943489551544,
	-0.23460740596055984,
	-0.13791173323988914,
	-0.045525018125772476,
	0.03979014977812767,
	0.1202552504837513,
	0.2035212516784668,
	0.2920137718319893,
	0.3893125355243683,
	0.5016634166240692,
	0.6427869200706482,
	0.8614784181118011,
}

// nf4Code returns the NF4 code of x, a weight already scaled by its
// block's 1/absmax, as dQuantizeNF4's decision tree picks it: a binary
// search over the thresholds whose every step is x > threshold, so that x
// on a threshold takes the lower code, and a NaN (a block of zeros, whose
// 1/absmax is infinite) takes code 0.
func nf4Code(x float32) uint8 {
	var c uint8
	for step := uint8(8); step > 0; step >>= 1 {
		if x > nf4Thresholds[c+step-1] {
			c += step
		}
	}
	return c
}

// dynamicCode is bitsandbytes' signed dynamic 8-bit code.
var dynamicCode = createDynamicMap()

// DynamicCode returns bitsandbytes' signed dynamic 8-bit code, the 256
// sorted values create_dynamic_map(signed=True) builds (-0.99296875 to
// 1): an NF4 block's absmax is stored as the index q of its value (less
// the offset) over its group's absmax, and read back as
// DynamicCode()[q]·groupAbsmax + offset (NF4Layout.BlockAbsmax).
func DynamicCode() [256]float32 { return dynamicCode }

// createDynamicMap builds bitsandbytes' create_dynamic_map(signed=True,
// max_exponent_bits=7, total_bits=8) (bitsandbytes/functional.py) in
// float32 as torch computes it: for i in 0..6, the 2^i means of adjacent
// points of linspace(0.1, 1, 2^i + 1), times 10^(i−6), with both signs;
// then 0 and 1; sorted.
func createDynamicMap() [256]float32 {
	data := make([]float32, 0, 256)
	for i := range 7 {
		b := linspace32(0.1, 1, 1<<i+1)
		scale := float32(math.Pow10(i - 6))
		for k := 0; k+1 < len(b); k++ {
			v := scale * ((b[k] + b[k+1]) / 2)
			data = append(data, v, -v)
		}
	}
	data = append(data, 0, 1)
	slices.Sort(data)
	return [256]float32(data)
}

// linspace32 returns torch.linspace(start, end, steps, dtype=float32) as
// PyTorch computes it, with step = (end − start)/(steps − 1) in float32:
// the first half counted up from start (start + step·i) and the second
// half down from end (end − step·(steps−1−i)), each point rounded once
// from its exact value, as the fused multiply-add of torch's builds
// rounds it. (The published values of create_dynamic_map need the single
// rounding: with step·i rounded first, 42 of the 256 differ in their last
// bit.) The exact value is computed in float64, where it fits: step has
// 24 significant bits and i under 2^7, and the sum's terms are within
// 2^5 of each other in magnitude.
func linspace32(start, end float32, steps int) []float32 {
	out := make([]float32, steps)
	step := float64((end - start) / float32(steps-1))
	for i := range out {
		if i < steps/2 {
			out[i] = float32(float64(start) + step*float64(i))
		} else {
			out[i] = float32(float64(end) - step*float64(steps-1-i))
		}
	}
	return out
}

// quantizeDynamic returns the index of x (already scaled into [−1, 1]) in
// the dynamic code, as bitsandbytes' dQuantize<0> (csrc/kernels.cu)
// finds it: a seven-step binary search from index 127, then the nearer of
// the last pivot and its neighbour on x's side, by comparison with their
// float32 midpoint (x on the midpoint keeps the pivot, which is always
// even: 127 ± 64 ± 32 … ± 1). A NaN (a group of equal absmaxes, whose
// 1/absmax is infinite) takes index 0.
func quantizeDynamic(code *[256]float32, x float32) uint8 {
	pivot, lowerPivot, upperPivot := 127, 0, 255
	lower, upper := float32(-1), float32(1)
	val := code[pivot]
	for i := 64; i > 0; i >>= 1 {
		if x > val {
			lowerPivot, lower = pivot, val
			pivot += i
		} else {
			upperPivot, upper = pivot, val
			pivot -= i
		}
		val = code[pivot]
	}
	if upperPivot == 255 {
		upper = code[255]
	}
	if lowerPivot == 0 {
		lower = code[0]
	}
	if x > val {
		if x > (upper+val)*0.5 {
			return uint8(upperPivot)
		}
		return uint8(pivot)
	}
	if x < (lower+val)*0.5 {
		return uint8(lowerPivot)
	}
	return uint8(pivot)
}

// NF4Layout locates the parts of an NF4 tensor in its Bytes, for kernels
// that read NF4 themselves. The weights are the [rows, cols] matrix
// flattened row-major, n of them, in blocks of NF4Block; byte offsets:
//
//   - [0, QAbsmax): the codes, two a byte: weight 2i's in byte i's high
//     nibble, weight 2i+1's in its low nibble (bitsandbytes' order); a
//     code c means NF4Levels[c] times the block's absmax.
//   - [QAbsmax, GroupAbsmax): one byte a block, its absmax less the
//     offset as an index into DynamicCode, scaled by its group's absmax.
//   - [GroupAbsmax, Offset): one little-endian float32 a group of NF4Group
//     blocks (the last group may be short), the largest magnitude of its
//     blocks' absmaxes less the offset.
//   - [Offset, Offset+4): the little-endian float32 offset, the mean of
//     the blocks' absmaxes.
//
// The float32s need not be 4-byte aligned. Block b's absmax is
// DynamicCode()[q_b]·groupAbsmax[b/NF4Group] + offset (BlockAbsmax), each
// operation rounded to float32, and weight i's value NF4Levels[c_i] times
// its block's absmax: bitsandbytes' dequantize_4bit with a nested absmax.
type NF4Layout struct {
	Blocks      int64 // weights / NF4Block
	Groups      int64 // ⌈Blocks / NF4Group⌉
	QAbsmax     int64 // start of the quantized absmaxes; the codes end here
	GroupAbsmax int64 // start of the groups' float32 absmaxes
	Offset      int64 // start of the float32 offset; Offset+4 is Bytes
}

// NF4LayoutOf returns the layout of a [rows, cols] NF4 tensor, whose
// shape must satisfy NF4.CheckShape.
func NF4LayoutOf(rows, cols int) NF4Layout { return nf4Layout(int64(rows) * int64(cols)) }

func nf4Layout(n int64) NF4Layout {
	blocks := n / NF4Block
	groups := (blocks + NF4Group - 1) / NF4Group
	return NF4Layout{
		Blocks:      blocks,
		Groups:      groups,
		QAbsmax:     n / 2,
		GroupAbsmax: n/2 + blocks,
		Offset:      n/2 + blocks + 4*groups,
	}
}

// BlockAbsmax returns block b's absmax as dequantize_4bit rebuilds it
// from the NF4 tensor src: DynamicCode()[q_b]·groupAbsmax + offset.
func (l NF4Layout) BlockAbsmax(src []byte, b int64) float32 {
	q := src[l.QAbsmax+b]
	g := getFloat32(src[l.GroupAbsmax+4*(b/NF4Group):])
	return float32(dynamicCode[q]*g) + getFloat32(src[l.Offset:])
}

// quantizeNF4 writes src as NF4 with double quantization into dst
// (bitsandbytes' quantize_4bit(quant_type="nf4", blocksize=64,
// compress_statistics=True) and the kernels it calls, kQuantizeBlockwise
// for NF4 and then for the absmaxes with the dynamic code): each block's
// absmax a is its largest magnitude and each weight's code is
// nf4Code(x·(1/a)); the offset is the absmaxes' mean; the absmaxes less
// the offset are quantized per group of NF4Group with quantizeDynamic,
// each scaled by 1/(the group's largest magnitude).
//
// The offset is the mean computed in float64 and rounded once to float32;
// torch's float32 mean (on the GPU, a tree of float32 sums) may differ
// from it in its last bit, which moves an absmax's code only when it lies
// on a midpoint of the dynamic code.
func quantizeNF4(dst []byte, src []float32) {
	l := nf4Layout(int64(len(src)))
	absmax := make([]float32, l.Blocks)
	for b := range absmax {
		x := src[NF4Block*b : NF4Block*(b+1)]
		var a float32
		for _, v := range x {
			a = max(a, abs32(v))
		}
		absmax[b] = a
		recip := 1 / a
		codes := dst[NF4Block/2*b : NF4Block/2*(b+1)]
		for j := range codes {
			codes[j] = nf4Code(x[2*j]*recip)<<4 | nf4Code(x[2*j+1]*recip)
		}
	}

	var sum float64
	for _, a := range absmax {
		sum += float64(a)
	}
	offset := float32(sum / float64(len(absmax)))
	putFloat32(dst[l.Offset:], offset)

	for g := range int(l.Groups) {
		grp := absmax[NF4Group*g : min(NF4Group*(g+1), len(absmax))]
		var gmax float32
		for i := range grp {
			grp[i] -= offset
			gmax = max(gmax, abs32(grp[i]))
		}
		putFloat32(dst[l.GroupAbsmax+4*int64(g):], gmax)
		recip := 1 / gmax
		q := dst[l.QAbsmax+int64(NF4Group*g):]
		for i, v := range grp {
			q[i] = quantizeDynamic(&dynamicCode, v*recip)
		}
	}
}

// dequantizeNF4 dequantizes an NF4 tensor laid out as NF4Layout says
// (bitsandbytes' dequantize_4bit with a nested absmax).
func dequantizeNF4(dst []float32, src []byte) {
	l := nf4Layout(int64(len(dst)))
	for b := range l.Blocks {
		a := l.BlockAbsmax(src, b)
		codes := src[NF4Block/2*b : NF4Block/2*(b+1)]
		y := dst[NF4Block*b : NF4Block*(b+1)]
		for j, c := range codes {
			y[2*j] = NF4Levels[c>>4] * a
			y[2*j+1] = NF4Levels[c&0x0F] * a
		}
	}
}

func getFloat32(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

func putFloat32(b []byte, f float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(f)) }
