package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"gpuz/internal/half"
)

// Dequantize sets dst, rows·cols float32s, to the [rows, cols] matrix
// stored in kind k in src (Bytes(rows, cols) bytes), as the format's
// reference dequantizer computes it (ggml's dequantize_row_*, bitsandbytes'
// dequantize_4bit). The float kinds widen.
func Dequantize(k Kind, dst []float32, src []byte, rows, cols int) error {
	if err := k.CheckShape(rows, cols); err != nil {
		return err
	}
	if int64(len(src)) != k.Bytes(rows, cols) || len(dst) != rows*cols {
		return fmt.Errorf("quant: dequantizing a %d×%d %v weight needs %d bytes into %d floats, got %d into %d",
			rows, cols, k, k.Bytes(rows, cols), rows*cols, len(src), len(dst))
	}
	if k == NF4 {
		dequantizeNF4(dst, src)
		return nil
	}
	rb := int(k.RowBytes(cols))
	for r := range rows {
		DequantizeRow(k, dst[r*cols:(r+1)*cols], src[r*rb:(r+1)*rb])
	}
	return nil
}

// DequantizeRow sets dst to one row stored in kind k in src, a whole
// number of blocks (RowBytes(len(dst)) bytes); every kind but NF4.
func DequantizeRow(k Kind, dst []float32, src []byte) {
	switch k {
	case F32:
		for i := range dst {
			dst[i] = float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = half.FP16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = half.BF16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case Q8_0:
		for b := 0; b < len(dst)/32; b++ {
			blk, y := src[34*b:34*b+34], dst[32*b:32*b+32]
			d := fp16(blk)
			for j := range 32 {
				y[j] = float32(int8(blk[2+j])) * d
			}
		}
	case Q4_0:
		for b := 0; b < len(dst)/32; b++ {
			blk, y := src[18*b:18*b+18], dst[32*b:32*b+32]
			d := fp16(blk)
			for j := range 16 {
				q := blk[2+j]
				y[j] = float32(int(q&0x0F)-8) * d
				y[j+16] = float32(int(q>>4)-8) * d
			}
		}
	case Q4_K:
		for b := 0; b < len(dst)/256; b++ {
			dequantizeQ4KBlock(dst[256*b:256*b+256], src[144*b:144*b+144])
		}
	case Q6_K:
		for b := 0; b < len(dst)/256; b++ {
			dequantizeQ6KBlock(dst[256*b:256*b+256], src[210*b:210*b+210])
		}
	default:
		panic(fmt.Sprintf("quant: DequantizeRow of %v", k))
	}
}

// dequantizeQ4KBlock dequantizes one Q4_K super-block (ggml's
// dequantize_row_q4_K): d and dmin in fp16, twelve bytes holding eight
// 6-bit scales and eight 6-bit mins (ScaleMinK4), then 128 bytes in four
// chunks of 32, each byte's low nibble a weight of the chunk's first
// sub-block of 32 and its high nibble the same place in the second.
func dequantizeQ4KBlock(y []float32, blk []byte) {
	d, dmin := fp16(blk), fp16(blk[2:])
	scales, qs := blk[4:16], blk[16:144]
	for c := range 4 {
		sc0, m0 := ScaleMinK4(2*c, scales)
		sc1, m1 := ScaleMinK4(2*c+1, scales)
		d0, n0 := d*float32(sc0), dmin*float32(m0)
		d1, n1 := d*float32(sc1), dmin*float32(m1)
		q, out := qs[32*c:32*c+32], y[64*c:64*c+64]
		for l := range 32 {
			out[l] = d0*float32(q[l]&0x0F) - n0
			out[32+l] = d1*float32(q[l]>>4) - n1
		}
	}
}

// dequantizeQ6KBlock dequantizes one Q6_K super-block (ggml's
// dequantize_row_q6_K): each weight is d·sc·(q − 32), d·sc rounded first,
// with q a 6-bit code and sc the int8 scale of its sub-block of 16
// (q6kCode, q6kScale).
func dequantizeQ6KBlock(y []float32, blk []byte) {
	d := fp16(blk[208:])
	for l := range y {
		ds := d * float32(q6kScale(blk, l))
		y[l] = ds * float32(int(q6kCode(blk, l))-32)
	}
}

// q6kCode returns the 6-bit code (0 to 63; the weight's q + 32) of weight l
// (0 to 255) of a Q6_K super-block blk, as ggml's dequantize_row_q6_K
// reads it. Each half of 128 weights has 64 bytes of ql (bytes 0–127) and
// 32 of qh (bytes 128–191); weight 32t + i of a half (t 0 to 3, i 0 to 31)
// keeps its low four bits in ql byte i + 32·(t mod 2), the low nibble for
// t < 2 and the high one after, and its high two bits in bits 2t and 2t+1
// of qh byte i.
func q6kCode(blk []byte, l int) uint8 {
	h, t, i := l/128, l%128/32, l%32
	lo := blk[64*h+32*(t&1)+i] >> (4 * (t >> 1)) & 0x0F
	hi := blk[128+32*h+i] >> (2 * t) & 3
	return lo | hi<<4
}

// q6kScale returns the int8 scale of weight l's sub-block of 16 (l/16) in
// a Q6_K super-block: bytes 192–207 (d, fp16, is bytes 208–209).
func q6kScale(blk []byte, l int) int8 { return int8(blk[192+l/16]) }

// ScaleMinK4 returns sub-block j's (0 to 7) 6-bit scale and min from a
// Q4_K block's twelve scale bytes (ggml's get_scale_min_k4): the first
// four of each in the low six bits of bytes 0–3 and 4–7, the last four
// split between the low and high nibbles of bytes 8–11 and the top two
// bits of bytes 0–7.
func ScaleMinK4(j int, q []byte) (scale, min uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return (q[j+4] & 0x0F) | ((q[j-4] >> 6) << 4), (q[j+4] >> 4) | ((q[j] >> 6) << 4)
}

// fp16 reads the little-endian IEEE half at b[0:2].
func fp16(b []byte) float32 { return half.FP16ToFloat32(binary.LittleEndian.Uint16(b)) }

func float32frombits(b uint32) float32 { return math.Float32frombits(b) }
