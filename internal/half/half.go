// Package half converts between float32 and the two 16-bit floating-point
// storage formats: bfloat16 (bf16: float32's sign and 8-bit exponent with 7
// bits of mantissa) and IEEE 754 binary16 (fp16: a 5-bit exponent and 10
// bits of mantissa). Values are held as their bit patterns in uint16.
//
// Conversions to 16 bits round to nearest, ties to even, as IEEE 754's
// default rounding and the hardware converters do (CUDA's
// __float2bfloat16_rn and __float2half_rn, x86's VCVTPS2PH with imm 0).
// fp16 keeps subnormals and overflows to ±Inf; bf16 has float32's range,
// so only float32 values rounding above its largest finite value overflow.
// A NaN stays a NaN (quiet, sign kept): truncating a NaN's mantissa could
// otherwise leave the pattern of an infinity. Conversions from 16 bits are
// exact.
package half

import (
	"fmt"
	"math"
)

// BF16FromFloat32 returns the bf16 nearest f, ties to even.
func BF16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fff_ffff > 0x7f80_0000 { // NaN: keep the sign and top payload, set the quiet bit
		return uint16(b>>16) | 0x0040
	}
	// Adding 0x7fff rounds the discarded half down below the halfway point
	// and up above it; the kept part's lowest bit breaks the tie to even. A
	// carry out of the mantissa moves to the next binade (or to Inf).
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BF16ToFloat32 returns the float32 whose value is the bf16 h.
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// fp16 bit layout.
const (
	fp16Inf       = 0x7c00
	fp16QuietNaN  = 0x7e00
	f32ExpShift   = 23
	f32ToF16Shift = f32ExpShift - 10 // mantissa bits dropped
	// f32 bit patterns of the thresholds in magnitude.
	f32Overflow = 0x477f_f000 // 65520: halfway between fp16's largest finite, 65504, and 2^16; ties go to Inf
	f32MinNorm  = 0x3880_0000 // 2^-14: fp16's smallest normal
	f32HalfTiny = 0x3300_0000 // 2^-25: half of fp16's smallest subnormal; ties go to 0
	// rebias is (127 - 15) << 23: the difference of the exponent biases.
	rebias = (127 - 15) << f32ExpShift
)

// FP16FromFloat32 returns the IEEE binary16 nearest f, ties to even:
// subnormal where f is below fp16's smallest normal (2^-14), ±0 at or
// below 2^-25 in magnitude, ±Inf at or above 65520.
func FP16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	abs := b & 0x7fff_ffff
	switch {
	case abs > 0x7f80_0000: // NaN
		return sign | fp16QuietNaN | uint16(abs>>f32ToF16Shift)&0x01ff
	case abs >= f32Overflow: // Inf, or finite but rounding past 65504
		return sign | fp16Inf
	case abs >= f32MinNorm:
		r := abs - rebias
		r += 0x0fff + (r>>f32ToF16Shift)&1
		return sign | uint16(r>>f32ToF16Shift)
	case abs > f32HalfTiny:
		// The value is m·2^(e-150) with the implicit bit in m; in units of
		// fp16's smallest subnormal, 2^-24, it is m·2^(e-126): shift right
		// by 126-e (14 to 24) and round to nearest even. Rounding up to
		// 0x400 gives the smallest normal's pattern, as it should.
		e := abs >> f32ExpShift
		m := abs&0x007f_ffff | 0x0080_0000
		shift := 126 - e
		k := m >> shift
		rem, halfway := m&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > halfway || rem == halfway && k&1 == 1 {
			k++
		}
		return sign | uint16(k)
	}
	return sign
}

// FP16ToFloat32 returns the float32 whose value is the fp16 h. A NaN
// becomes a quiet NaN with its payload in float32's top mantissa bits, as
// x86's F16C conversion (VCVTPH2PS) makes it.
func FP16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x03ff)
	switch {
	case exp == 0x1f && man != 0: // NaN
		return math.Float32frombits(sign | 0x7fc0_0000 | man<<f32ToF16Shift)
	case exp == 0x1f: // Inf
		return math.Float32frombits(sign | 0x7f80_0000)
	case exp != 0:
		return math.Float32frombits(sign | (exp<<10|man)<<f32ToF16Shift + rebias)
	case man == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: man·2^-24, exact in float32.
	return math.Float32frombits(sign | math.Float32bits(float32(man)*0x1p-24))
}

// BF16FromFloat32s converts src to bf16 into dst, element by element; it
// panics if dst is shorter than src.
func BF16FromFloat32s(dst []uint16, src []float32) { convert(dst, src, BF16FromFloat32) }

// BF16ToFloat32s converts the bf16 values of src into dst; it panics if
// dst is shorter than src.
func BF16ToFloat32s(dst []float32, src []uint16) { convert(dst, src, BF16ToFloat32) }

// FP16FromFloat32s converts src to fp16 into dst, element by element; it
// panics if dst is shorter than src.
func FP16FromFloat32s(dst []uint16, src []float32) { convert(dst, src, FP16FromFloat32) }

// FP16ToFloat32s converts the fp16 values of src into dst; it panics if
// dst is shorter than src.
func FP16ToFloat32s(dst []float32, src []uint16) { convert(dst, src, FP16ToFloat32) }

// convert sets dst[i] = f(src[i]) for each element of src; it panics if
// dst is shorter than src. Small enough to be inlined into each slice
// converter, where f becomes a direct call that is inlined too.
func convert[S, D any](dst []D, src []S, f func(S) D) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = f(v)
	}
}

// Format names one of the two 16-bit formats.
type Format int

// The formats.
const (
	BF16 Format = iota + 1 // bfloat16
	FP16                   // IEEE 754 binary16
)

// String returns "bf16" or "fp16".
func (f Format) String() string {
	switch f {
	case BF16:
		return "bf16"
	case FP16:
		return "fp16"
	default:
		return fmt.Sprintf("half.Format(%d)", int(f))
	}
}

// Words returns the float32-sized words that n 16-bit values fill, packed
// two to a word: the unit in which devices allocate and page memory.
func Words(n int) int { return (n + 1) / 2 }
