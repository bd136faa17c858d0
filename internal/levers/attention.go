package levers

// Attention is how a model's attention is computed: eagerly, keeping each
// layer's probabilities (batch × heads × sequence² values) for the
// backward pass, or fused, keeping only the output and one log-sum-exp per
// row and computing the probabilities again, block by block, in the
// backward pass (FlashAttention's algorithm, PyTorch's
// scaled_dot_product_attention).
type Attention string

// The attention settings.
const (
	// AttentionEager computes the probabilities, keeps them and mixes the
	// values with them, as nn.MultiheadAttention and transformers'
	// "eager" attention do.
	AttentionEager Attention = "eager"
	// AttentionFused computes each query block's output with an online
	// softmax over the key blocks and keeps the output and the rows'
	// log-sum-exp only: activations that grow with the sequence, not its
	// square.
	AttentionFused Attention = "fused"
)

// Attentions returns every attention setting, eager first.
func Attentions() []Attention { return []Attention{AttentionEager, AttentionFused} }

// ParseAttention reads an attention setting as a flag gives it.
func ParseAttention(s string) (Attention, error) { return parse("attention", s, Attentions()) }

// Validate reports a setting that is not one of Attentions; "" is the
// workload's default.
func (a Attention) Validate() error { return validate("attention", a, Attentions()) }

// Or returns a, or def when a is "" (the workload's default).
func (a Attention) Or(def Attention) Attention {
	if a == "" {
		return def
	}
	return a
}

// Fused reports whether a is AttentionFused.
func (a Attention) Fused() bool { return a == AttentionFused }
