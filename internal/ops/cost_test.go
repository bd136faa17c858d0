package ops

import (
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
)

// coster is what package engine reads an op's work through.
type coster interface {
	Cost(shapes []tensor.Shape) device.Cost
}

// TestCostByHand checks cost rules against figures derived by hand.
func TestCostByHand(t *testing.T) {
	for _, tc := range []struct {
		name   string
		op     Spec
		shapes []tensor.Shape
		want   device.Cost
	}{
		// GEMM 60×2000 by 2000×2000: 2·60·2000·2000, then the bias pass.
		{"Linear", Linear{}, []tensor.Shape{{60, 2000}, {2000, 2000}, {2000}},
			device.Cost{FLOPs: 2*60*2000*2000 + 60*2000, ReadBytes: 4 * (60*2000 + 2000*2000 + 60*2000 + 2000), WriteBytes: 4 * 2 * 60 * 2000}},
		// dx = g·W: 3×5 by 5×4.
		{"LinearInputGrad", LinearInputGrad{}, []tensor.Shape{{3, 5}, {5, 4}},
			device.Cost{FLOPs: 2 * 3 * 4 * 5, ReadBytes: 4 * (15 + 20), WriteBytes: 4 * 12}},
		// dW = gᵀ·x: 5×3 by 3×4.
		{"LinearWeightGrad", LinearWeightGrad{}, []tensor.Shape{{3, 5}, {3, 4}},
			device.Cost{FLOPs: 2 * 5 * 4 * 3, ReadBytes: 4 * (15 + 12), WriteBytes: 4 * 20}},
		{"Add", Add{}, []tensor.Shape{{4, 6}, {4, 6}}, device.Cost{FLOPs: 24, ReadBytes: 4 * 48, WriteBytes: 4 * 24}},
		// 2 images of 3×8×8, 4 filters 3×3 with padding 1: 8×8 outputs,
		// a column matrix of 27 rows × 128 positions.
		{"Conv2d", Conv2d{Pad: 1}, []tensor.Shape{{2, 3, 8, 8}, {4, 3, 3, 3}, {4}},
			device.Cost{FLOPs: 2*4*27*128 + 4*128, ReadBytes: 4 * (2*3*64 + 27*128 + 4*27 + 4*128 + 4), WriteBytes: 4 * (27*128 + 2*4*128)}},
		{"MeanGrad", MeanGrad{Dims: 2}, []tensor.Shape{{3, 5}, {}}, device.Cost{ReadBytes: 4, WriteBytes: 60}},
		// P·V for one sequence of 4 and one head of 2: 2·4·4·2 FLOPs, or,
		// causal, the lower triangle's 4·5/2 entries of P: 2·10·2.
		{"AttentionMix", AttentionMix{AttentionConfig{Heads: 1, SeqLen: 4}}, []tensor.Shape{{1, 1, 4, 4}, {4, 6}},
			device.Cost{FLOPs: 2 * 16 * 2, ReadBytes: 4 * (16 + 24), WriteBytes: 4 * 8}},
		{"AttentionMix causal", AttentionMix{AttentionConfig{Heads: 1, SeqLen: 4, Causal: true}}, []tensor.Shape{{1, 1, 4, 4}, {4, 6}},
			device.Cost{FLOPs: 2 * 10 * 2, ReadBytes: 4 * (16 + 24), WriteBytes: 4 * 8}},
		// The fused attention of one sequence of 4, one head of 2 (qkv
		// [4, 6]): Q·Kᵀ and P·V, 2·16·2 each, and 5 operations per score;
		// causal, 4·5/2 = 10 scores. It writes the packed [4, 2 + 1].
		{"FusedAttention", FusedAttention{AttentionConfig{Heads: 1, SeqLen: 4}}, []tensor.Shape{{4, 6}},
			device.Cost{FLOPs: 2*(2*16*2) + 5*16, ReadBytes: 4 * 24, WriteBytes: 4 * 12}},
		{"FusedAttention causal", FusedAttention{AttentionConfig{Heads: 1, SeqLen: 4, Causal: true}}, []tensor.Shape{{4, 6}},
			device.Cost{FLOPs: 2*(2*10*2) + 5*10, ReadBytes: 4 * 24, WriteBytes: 4 * 12}},
		// Two query heads of 2 sharing one key and value head over a
		// sequence of 3 (qkv [3, 4 + 2·2]): the query heads' work, 2·9
		// scores; the packed value [3, 4 + 2].
		{"FusedAttention GQA", FusedAttention{AttentionConfig{Heads: 2, KVHeads: 1, SeqLen: 3}}, []tensor.Shape{{3, 8}},
			device.Cost{FLOPs: 2*(2*18*2) + 5*18, ReadBytes: 4 * 24, WriteBytes: 4 * 18}},
		// Its gradient: Q·Kᵀ recomputed, Pᵀ·dO, dO·Vᵀ, dS·K and dSᵀ·Q, 2·16·2
		// each, and 5 operations per score; it reads qkv, the output, the
		// log-sum-exps and the packed gradient and writes qkv's gradient.
		{"FusedAttentionGrad", FusedAttentionGrad{AttentionConfig{Heads: 1, SeqLen: 4}}, []tensor.Shape{{4, 6}, {4, 2}, {1, 1, 4}, {4, 3}},
			device.Cost{FLOPs: 5*(2*16*2) + 5*16, ReadBytes: 4 * (24 + 8 + 4 + 12), WriteBytes: 4 * 24}},
		{"FusedAttentionGrad causal", FusedAttentionGrad{AttentionConfig{Heads: 1, SeqLen: 4, Causal: true}}, []tensor.Shape{{4, 6}, {4, 2}, {1, 1, 4}, {4, 3}},
			device.Cost{FLOPs: 5*(2*10*2) + 5*10, ReadBytes: 4 * (24 + 8 + 4 + 12), WriteBytes: 4 * 24}},
		// RMSNorm of x [5, 7]: 4 operations per element (square and add,
		// normalise, scale); its input gradient 9 (the statistic
		// recomputed, ĝ = w ⊙ g, the row sum of ĝ ⊙ x̂, the combination);
		// its weight gradient 5 per element of x.
		{"RMSNorm", RMSNorm{}, []tensor.Shape{{5, 7}, {7}}, device.Cost{FLOPs: 4 * 35, ReadBytes: 4 * (35 + 7), WriteBytes: 4 * 35}},
		{"RMSNormInputGrad", RMSNormInputGrad{}, []tensor.Shape{{5, 7}, {7}, {5, 7}},
			device.Cost{FLOPs: 9 * 35, ReadBytes: 4 * (35 + 7 + 35), WriteBytes: 4 * 35}},
		{"RMSNormWeightGrad", RMSNormWeightGrad{}, []tensor.Shape{{5, 7}, {5, 7}},
			device.Cost{FLOPs: 5 * 35, ReadBytes: 4 * 70, WriteBytes: 4 * 7}},
		// 9 operations per element.
		{"GELUTanh", GELUTanh{}, []tensor.Shape{{4, 6}}, device.Cost{FLOPs: 9 * 24, ReadBytes: 4 * 24, WriteBytes: 4 * 24}},
		{"GELUTanhGrad", GELUTanhGrad{}, []tensor.Shape{{4, 6}, {4, 6}}, device.Cost{FLOPs: 20 * 24, ReadBytes: 4 * 48, WriteBytes: 4 * 24}},
		// GEMM 60×768 by 768×2304 (GPT-2's c_attn), then the bias pass.
		{"Conv1D", Conv1D{}, []tensor.Shape{{60, 768}, {768, 2304}, {2304}},
			device.Cost{FLOPs: 2*60*768*2304 + 60*2304, ReadBytes: 4 * (60*768 + 768*2304 + 60*2304 + 2304), WriteBytes: 4 * 2 * 60 * 2304}},
		// dx = g·Wᵀ: 3×5 by 5×4.
		{"Conv1DInputGrad", Conv1DInputGrad{}, []tensor.Shape{{3, 5}, {4, 5}},
			device.Cost{FLOPs: 2 * 3 * 4 * 5, ReadBytes: 4 * (15 + 20), WriteBytes: 4 * 12}},
		// dW = xᵀ·g: 4×3 by 3×5.
		{"Conv1DWeightGrad", Conv1DWeightGrad{}, []tensor.Shape{{3, 4}, {3, 5}},
			device.Cost{FLOPs: 2 * 4 * 5 * 3, ReadBytes: 4 * (12 + 15), WriteBytes: 4 * 20}},
		// 6 ids, 6 rows of 4 gathered and written.
		{"TokenEmbedding", TokenEmbedding{}, []tensor.Shape{{2, 3}, {50, 4}}, device.Cost{ReadBytes: 4 * (6 + 24), WriteBytes: 4 * 24}},
		// x read whole, 3 of the table's 5 rows read.
		{"AddPositions", AddPositions{SeqLen: 3}, []tensor.Shape{{6, 4}, {5, 4}}, device.Cost{FLOPs: 24, ReadBytes: 4 * (24 + 12), WriteBytes: 4 * 24}},
		{"PositionsGrad", PositionsGrad{SeqLen: 3, Rows: 5}, []tensor.Shape{{6, 4}}, device.Cost{FLOPs: 24, ReadBytes: 4 * 24, WriteBytes: 4 * 20}},
		// 3×4 by 4×5: 2·3·5·4, no bias pass.
		{"Projection", Projection{}, []tensor.Shape{{3, 4}, {5, 4}}, device.Cost{FLOPs: 120, ReadBytes: 4 * (12 + 20), WriteBytes: 4 * 15}},
		// 6 tokens of 12 rotated columns, 3 operations each; the 3 copied
		// columns cost only their bytes.
		{"Rotary", rotary, []tensor.Shape{{6, 15}, {3, 3}, {3, 3}}, device.Cost{FLOPs: 3 * 6 * 12, ReadBytes: 4 * (90 + 9 + 9), WriteBytes: 4 * 90}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := New(tc.op).(coster).Cost(tc.shapes); got != tc.want {
				t.Errorf("Cost(%v) = %+v, want %+v", tc.shapes, got, tc.want)
			}
		})
	}
}

// movers are the ops of the launch tables that only move data (a
// broadcast, the fused attention's slices of its packed output, a gather):
// their costs count bytes and no operations.
var movers = map[string]bool{"MeanGrad": true, "FusedAttentionOut": true, "FusedAttentionLSE": true,
	"FusedAttentionPack": true, "TokenEmbedding": true}

// TestEveryOpHasACost checks that every op of the launch tables reports
// work: some bytes read and written, operations unless it is one of the
// movers, and nothing for shapes it rejects.
func TestEveryOpHasACost(t *testing.T) {
	for _, tc := range slices.Concat(launchCases, conv2dLaunchCases, attentionLaunchCases, gpt2LaunchCases, llamaLaunchCases) {
		t.Run(tc.name, func(t *testing.T) {
			op := New(tc.op).(coster)
			kind, _, _ := strings.Cut(name(tc.op), "{")
			if c := op.Cost(tc.shapes); c.ReadBytes <= 0 || c.WriteBytes <= 0 || c.FLOPs < 0 || (c.FLOPs == 0) != movers[kind] {
				t.Errorf("Cost(%v) = %+v, want bytes read and written, and operations unless %s only moves data", tc.shapes, c, kind)
			}
			if c := op.Cost(tc.shapes[1:]); c != (device.Cost{}) {
				t.Errorf("Cost of the wrong arity = %+v, want none", c)
			}
		})
	}
}
