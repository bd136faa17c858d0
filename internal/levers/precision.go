package levers

// Precision is the storage precision of a model's values on the compute
// device: float32 everywhere, or 16 bits (bf16 or fp16) under automatic
// mixed precision's rules (see Cast).
type Precision string

// The precision settings.
const (
	// FP32 stores and computes everything in float32.
	FP32 Precision = "fp32"
	// BF16 stores the products' operands and results in bfloat16:
	// float32's range with 8 bits of mantissa. No loss scaling.
	BF16 Precision = "bf16"
	// FP16 stores them in IEEE binary16; training scales the loss
	// dynamically, as PyTorch's GradScaler does, since small gradients
	// underflow fp16's range.
	FP16 Precision = "fp16"
)

// Precisions returns every precision setting, the default first.
func Precisions() []Precision { return []Precision{FP32, BF16, FP16} }

// ParsePrecision reads a precision setting as a flag gives it.
func ParsePrecision(s string) (Precision, error) { return parse("precision", s, Precisions()) }

// Setting returns p, FP32 for "" (the zero value, as an unset field holds
// it).
func (p Precision) Setting() Precision {
	if p == "" {
		return FP32
	}
	return p
}

// Half reports whether p stores values in 16 bits; "" is FP32.
func (p Precision) Half() bool { return p == BF16 || p == FP16 }

// Validate reports a setting that is not one of Precisions; "" is FP32.
func (p Precision) Validate() error { return validate("precision", p, Precisions()) }

// String returns the setting's name; "" reads as fp32.
func (p Precision) String() string { return string(p.Setting()) }

// Cast is how an op treats 16-bit storage, after the op lists of PyTorch's
// automatic mixed precision (autocast): which ops run on 16-bit operands,
// which in float32, and which in the widest type they are given.
type Cast int

// The op classes.
const (
	// CastPromote runs the op in the widest type of its inputs and stores
	// its result in that type: element-wise ops, additions, lookups
	// (autocast's "promote" and the ops it leaves alone). It is the zero
	// value, so an op that declares nothing is treated as one.
	CastPromote Cast = iota
	// CastLower rounds every floating-point input to 16 bits and stores
	// the result in 16 bits; the arithmetic accumulates in float32
	// (products and convolutions, and their gradients: autocast's
	// lower-precision list).
	CastLower
	// CastFP32 reads every input as float32 and stores a float32 result
	// (softmax, layer norm, the losses, sums and norms: autocast's fp32
	// list).
	CastFP32
	// CastLowerIn rounds every floating-point input to 16 bits, as
	// CastLower does, but stores a float32 result: a product whose result
	// holds sums that 16 bits would spoil (the fused attention's packed
	// output, whose log-sum-exps the backward pass exponentiates).
	CastLowerIn
)

// String names the class as autocast's documentation does.
func (c Cast) String() string {
	switch c {
	case CastLower:
		return "lower"
	case CastLowerIn:
		return "lower, float32 result"
	case CastFP32:
		return "fp32"
	default:
		return "promote"
	}
}
