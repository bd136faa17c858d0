package torchplan

// This file is the table of rules: for each op of the forward pass of a
// transformers decoder, what its backward reads, as PyTorch's autograd
// saves it. A row is derivatives.yaml's entry for the op: for each
// differentiable input, the tensors that input's gradient formula names
// (the other inputs, the op's results). The tracer (trace.go) saves, for
// every input that requires a gradient, the tensors its row names; a
// parameter is never counted (it is a parameter, not an activation), and
// a tensor named twice is counted once. Where PyTorch 1.13 and 2.x differ,
// the op has a row for each.

// ref names one tensor of an op: one of its inputs or one of its results.
type ref struct {
	out bool // a result, not an input
	i   int
}

// in and out name an op's i-th input and i-th result.
func in(i int) ref  { return ref{i: i} }
func out(i int) ref { return ref{out: true, i: i} }

// versions is a set of PyTorch versions a rule applies to.
type versions int

// The versions the rules know.
const (
	v113 versions = 1 << iota // PyTorch 1.13
	v2                        // PyTorch 2.x
	all  = v113 | v2
)

// rule is one row: op (as the trace names it, after derivatives.yaml),
// the versions it holds for, for each input the tensors its gradient
// reads, and where that is written.
type rule struct {
	op     string
	in     versions
	needs  [][]ref // needs[i]: what the gradient of input i reads
	source string
}

// rules is the table. Sources are pytorch/pytorch's
// tools/autograd/derivatives.yaml (v1.13.0 and v2.5.0) and the functions
// of transformers' modeling files that call the op.
var rules = []rule{
	{"embedding", all, [][]ref{{in(1)}, nil},
		"derivatives.yaml embedding: weight: embedding_backward(grad, indices, …) (the token ids, int64)"},
	{"linear", all, [][]ref{{in(1)}, {in(0)}, nil},
		"derivatives.yaml mm (matmul and linear decompose to it): self: mm_mat1_backward(grad, mat2, …), mat2: mm_mat2_backward(grad, self, …); addmm's bias: maybe_multiply(grad, beta), nothing saved. Under autocast both operands are its 16-bit copies"},
	{"addmm", all, [][]ref{nil, {in(2)}, {in(1)}},
		"derivatives.yaml addmm: self: maybe_multiply(grad, beta); mat1: mm_mat1_backward(grad, mat2, …); mat2: mm_mat2_backward(grad, mat1, …) (GPT-2's Conv1D)"},
	{"bmm", all, [][]ref{{in(1)}, {in(0)}},
		"derivatives.yaml bmm: self: grad.bmm(mat2.transpose(1, 2)), mat2: self.transpose(1, 2).bmm(grad) (attention's q·kᵀ and probs·v, through matmul's fold: a non-contiguous operand is copied first)"},
	{"mul", all, [][]ref{{in(1)}, {in(0)}},
		"derivatives.yaml mul.Tensor: self: mul_tensor_backward(grad, other, …), other: mul_tensor_backward(grad, self, …); a Python number is a wrapped 0-d float64 tensor, saved as other (8 bytes)"},
	{"div", all, [][]ref{{in(1)}, {in(0), in(1)}},
		"derivatives.yaml div.Tensor: self: div_tensor_self_backward(grad, other, …), other: div_tensor_other_backward(grad, self, other) (modeling_gpt2.py's and eager attention's scores / √hd)"},
	{"add", all, [][]ref{nil, nil},
		"derivatives.yaml add.Tensor: self: handle_r_to_c(self.scalar_type(), grad), other: … maybe_multiply(grad, alpha): nothing saved"},
	{"pow", all, [][]ref{{in(0)}},
		"derivatives.yaml pow.Tensor_Scalar: self: pow_backward(grad, self, exponent) (LlamaRMSNorm's hidden_states.pow(2), gelu_new's pow(x, 3))"},
	{"mean", v113, [][]ref{{in(0)}},
		"derivatives.yaml v1.13 mean.dim: self: sum_backward(grad, self.sizes(), dim, keepdim) / _safe_size(self.sizes(), dim); 1.13 keeps the input itself, as measured (TestSavedMatchesTorch: LlamaRMSNorm's x², tokens·hidden float32)"},
	{"mean", v2, [][]ref{nil},
		"derivatives.yaml v2.x mean.dim: self: mean_backward(grad, self.sym_sizes(), dim, self.sym_numel(), keepdim): the sizes alone"},
	{"rsqrt", all, [][]ref{{out(0)}},
		"derivatives.yaml rsqrt: self: -0.5 * grad * result.pow(3).conj() (LlamaRMSNorm's rsqrt(variance + eps), [tokens, 1])"},
	{"layer_norm", all, [][]ref{{in(0), in(1), in(2), out(1), out(2)}, {in(0), in(1), in(2), out(1), out(2)}, {in(0), in(1), in(2), out(1), out(2)}},
		"derivatives.yaml native_layer_norm: input, weight, bias: native_layer_norm_backward(grad, input, normalized_shape, result1, result2, weight, bias, …): the input and the mean and rstd, [tokens] float32 each (GPT-2's ln_1, ln_2, ln_f)"},
	{"silu", all, [][]ref{{in(0)}},
		"derivatives.yaml silu: self: GradMode::is_enabled() ? infinitely_differentiable_silu_backward(grad, self) : silu_backward(grad, self) (LlamaMLP's act_fn(gate_proj(x)))"},
	{"tanh", all, [][]ref{{out(0)}},
		"derivatives.yaml tanh: self: tanh_backward(grad, result) (modeling_gpt2's NewGELUActivation)"},
	{"softmax", all, [][]ref{{out(0)}},
		"derivatives.yaml _softmax: self: _softmax_backward_data(grad, result, dim, self.scalar_type()) (eager attention's softmax(dtype=float32))"},
	{"log_softmax", all, [][]ref{{out(0)}},
		"derivatives.yaml _log_softmax: self: _log_softmax_backward_data(grad, result, dim, self.scalar_type()) (cross_entropy of the logits upcast to float32: [tokens, vocab] float32)"},
	{"nll_loss", all, [][]ref{{in(0), in(1), out(1)}, nil},
		"derivatives.yaml nll_loss_forward: self: nll_loss_backward(grad, self, target, weight, reduction, ignore_index, total_weight): the log-probabilities, the targets (int64) and the 0-d total weight"},
	{"sdpa_flash", v2, [][]ref{{in(0), in(1), in(2), out(0), out(1)}, {in(0), in(1), in(2), out(0), out(1)}, {in(0), in(1), in(2), out(0), out(1)}},
		"derivatives.yaml _scaled_dot_product_flash_attention (and _efficient_attention): query, key, value: …_backward(grad, query, key, value, output, logsumexp, …): q, k, v, the output and one float32 log-sum-exp per row (transformers' sdpa_attention_forward)"},
	{"leaky_relu", all, [][]ref{{in(0)}},
		"derivatives.yaml leaky_relu: self: leaky_relu_backward(grad, self, negative_slope, false) (torch_reference.py's nn.LeakyReLU(0.01))"},
	{"convolution", all, [][]ref{{in(0), in(1)}, {in(0), in(1)}, {in(0), in(1)}},
		"derivatives.yaml convolution: input, weight, bias: convolution_backward(grad, input, weight, …): the input and the weight (under autocast its 16-bit copy) whichever needs the gradient (torch_reference.py's resnet)"},
	{"mse_loss", all, [][]ref{{in(0), in(1)}, {in(0), in(1)}},
		"derivatives.yaml mse_loss: self: mse_loss_backward(grad, self, target, reduction), target: mse_loss_backward(grad, target, self, reduction); on CPU autocast's float32 list, so a 16-bit input is copied to float32 first"},
	{"masked_fill", all, [][]ref{{in(1)}, nil},
		"derivatives.yaml masked_fill.Scalar: self: grad.masked_fill(mask, 0): the mask (torch_reference.py's causal [S, S] bool)"},
	{"copy", all, [][]ref{nil},
		"derivatives.yaml _to_copy, clone, cat, neg, expand and reshape's copy: nothing saved (autocast's casts, repeat_kv, rotate_half, matmul's fold of a non-contiguous operand)"},
}

// ruleFor returns the row for op under version v, false when the table
// has none.
func ruleFor(op string, v versions) (rule, bool) {
	for _, r := range rules {
		if r.op == op && r.in&v != 0 {
			return r, true
		}
	}
	return rule{}, false
}
