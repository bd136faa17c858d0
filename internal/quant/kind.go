// Package quant holds the storage kinds of frozen weights narrower than
// 16 bits: ggml's block formats Q8_0, Q4_0, Q4_K and Q6_K, byte for byte as
// llama.cpp's GGUF files store them, and bitsandbytes' NF4 with double
// quantization, as QLoRA stores its frozen base. A quantized weight is a
// matrix [rows, cols] quantized along its rows (a row is one output's
// weights, as in GGUF and in gpuz's [out, in] projections): its bytes are
// the blocks of row 0, then of row 1, and so on, except NF4's, whose
// blocks run over the flattened matrix and whose block constants follow
// the codes (see NF4Layout).
//
// The package is the formats' reference: it sizes, quantizes and
// dequantizes. The kernels that multiply by a quantized weight without
// widening it are in package hostmath (and the device's).
package quant

import (
	"fmt"
	"strings"
)

// Kind is how a weight's elements are stored.
type Kind uint8

// The kinds. The float kinds are here so that one flag (--weights) and one
// GGUF type field name every storage; this package quantizes only the
// block kinds.
const (
	F32  Kind = iota // 4 bytes a weight
	F16              // IEEE half, 2 bytes a weight
	BF16             // bfloat16, 2 bytes a weight
	Q8_0             // ggml: 32 weights a block, an fp16 scale and 32 int8 (34 bytes)
	Q4_0             // ggml: 32 weights a block, an fp16 scale and 16 bytes of nibbles (18 bytes)
	Q4_K             // ggml: 256 weights a super-block, fp16 d and dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles (144 bytes)
	Q6_K             // ggml: 256 weights a super-block, 128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 scales, fp16 d (210 bytes)
	NF4              // bitsandbytes: 64 weights a block, 4-bit NormalFloat codes; absmax double-quantized to 8 bits per 256 blocks
)

// Kinds lists every kind in flag order.
var Kinds = []Kind{F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, NF4}

var names = [...]string{F32: "f32", F16: "f16", BF16: "bf16", Q8_0: "q8_0", Q4_0: "q4_0", Q4_K: "q4_k", Q6_K: "q6_k", NF4: "nf4"}

// String returns the kind's flag name: f32, f16, bf16, q8_0, q4_0, q4_k,
// q6_k or nf4.
func (k Kind) String() string {
	if int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Parse returns the kind named s (any case; "q4_k_m" is not a kind: a
// GGUF file's Q4_K_M mixes Q4_K and Q6_K tensors).
func Parse(s string) (Kind, error) {
	for k, n := range names {
		if strings.EqualFold(s, n) {
			return Kind(k), nil
		}
	}
	return 0, fmt.Errorf("unknown weight kind %q (want one of %s)", s, strings.Join(names[:], ", "))
}

// Quantized reports whether the kind is a block kind (Q8_0, Q4_0, Q4_K,
// Q6_K, NF4) rather than a float.
func (k Kind) Quantized() bool { return k >= Q8_0 && k <= NF4 }

// BlockWeights returns the weights in one block: 32 for Q8_0 and Q4_0,
// 256 for Q4_K and Q6_K, 64 for NF4, 1 for the floats. A quantized matrix's rows
// must be a whole number of blocks (CheckShape).
func (k Kind) BlockWeights() int {
	switch k {
	case Q8_0, Q4_0:
		return 32
	case Q4_K, Q6_K:
		return 256
	case NF4:
		return 64
	}
	return 1
}

// blockBytes returns the bytes of one ggml block; NF4's codes alone (its
// constants are per tensor, see Bytes).
func (k Kind) blockBytes() int {
	switch k {
	case F32:
		return 4
	case F16, BF16:
		return 2
	case Q8_0:
		return 34
	case Q4_0:
		return 18
	case Q4_K:
		return 144
	case Q6_K:
		return 210
	case NF4:
		return 32
	}
	panic(fmt.Sprintf("quant: no block size for %v", k))
}

// NF4's double quantization: every NF4Block weights have an absmax, whose
// mean (the offset, float32) is subtracted and which are then quantized
// to one byte each with bitsandbytes' signed dynamic 8-bit code, per
// NF4Group absmaxes, each group with its own float32 absmax.
const (
	NF4Block = 64
	NF4Group = 256
)

// CheckShape returns an error unless a [rows, cols] matrix can be stored
// in kind k: its rows a whole number of blocks.
func (k Kind) CheckShape(rows, cols int) error {
	if rows <= 0 || cols <= 0 {
		return fmt.Errorf("a %v weight of %d×%d has no elements", k, rows, cols)
	}
	if b := k.BlockWeights(); cols%b != 0 {
		return fmt.Errorf("a %v weight's rows must be a multiple of %d weights; these have %d", k, b, cols)
	}
	return nil
}

// RowBytes returns the bytes of one row of cols weights in kind k, for the
// kinds whose rows are stored one after another (every kind but NF4,
// whose constants are per tensor). cols must satisfy CheckShape.
func (k Kind) RowBytes(cols int) int64 {
	return int64(cols/k.BlockWeights()) * int64(k.blockBytes())
}

// Bytes returns the bytes of a [rows, cols] matrix stored in kind k; the
// shape must satisfy CheckShape. NF4's are the codes (half a byte a
// weight), one byte of quantized absmax a block, a float32 absmax a group
// of NF4Group blocks and the float32 offset.
func (k Kind) Bytes(rows, cols int) int64 {
	if k != NF4 {
		return int64(rows) * k.RowBytes(cols)
	}
	n := int64(rows) * int64(cols)
	blocks := n / NF4Block
	groups := (blocks + NF4Group - 1) / NF4Group
	return n/2 + blocks + 4*groups + 4
}

// BitsPerWeight returns the kind's bits per weight for a large matrix:
// 32, 16, 16, 8.5, 4.5, 4.5, 6.5625 and about 4.127.
func (k Kind) BitsPerWeight() float64 {
	if k == NF4 {
		return 4 + 8.0/NF4Block + 32.0/(NF4Block*NF4Group)
	}
	return 8 * float64(k.blockBytes()) / float64(k.BlockWeights())
}

// GGML type numbers, as gguf and ggml.h number them.
const (
	ggmlF32  = 0
	ggmlF16  = 1
	ggmlQ4_0 = 2
	ggmlQ8_0 = 8
	ggmlQ4_K = 12
	ggmlQ6_K = 14
	ggmlBF16 = 30
)

// FromGGML returns the kind of ggml tensor type t (its number in a GGUF
// file); ok is false for a type gpuz does not implement (NF4 has none).
func FromGGML(t uint32) (k Kind, ok bool) {
	switch t {
	case ggmlF32:
		return F32, true
	case ggmlF16:
		return F16, true
	case ggmlBF16:
		return BF16, true
	case ggmlQ8_0:
		return Q8_0, true
	case ggmlQ4_0:
		return Q4_0, true
	case ggmlQ4_K:
		return Q4_K, true
	case ggmlQ6_K:
		return Q6_K, true
	}
	return 0, false
}

// GGML returns kind k's ggml tensor type number; ok is false for NF4,
// which GGUF cannot hold.
func (k Kind) GGML() (t uint32, ok bool) {
	switch k {
	case F32:
		return ggmlF32, true
	case F16:
		return ggmlF16, true
	case BF16:
		return ggmlBF16, true
	case Q8_0:
		return ggmlQ8_0, true
	case Q4_0:
		return ggmlQ4_0, true
	case Q4_K:
		return ggmlQ4_K, true
	case Q6_K:
		return ggmlQ6_K, true
	}
	return 0, false
}
