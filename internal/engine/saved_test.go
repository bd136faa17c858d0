package engine

import (
	"fmt"
	"strings"
	"testing"

	"gpuz/internal/levers"
)

// TestSavedValues lists the linear hand model's saved values
// (TestRecomputeKeepsBlockInputs names them by step): without recompute
// z0 with L0, h0 and z1 with L1, h1, z2 and h2 with L2; with it h0 with L1
// and h1 with L2, which the re-run Linear reads; under bf16 the Linears'
// outputs in 16 bits. Their bytes add up to Bytes().Saved.
func TestSavedValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"fp32", Spec{}, "L0 Linear 2x4 32 B by LeakyReLUGrad; " +
			"L1 LeakyReLU 2x4 32 B by LinearWeightGrad; L1 Linear 2x4 32 B by LeakyReLUGrad; " +
			"L2 LeakyReLU 2x4 32 B by LinearWeightGrad; L2 Linear 2x4 32 B by LeakyReLUGrad; L2 LeakyReLU 2x4 32 B by MSEGrad"},
		{"recompute", Spec{Recompute: levers.RecomputeBlocks}, "L1 LeakyReLU 2x4 32 B by Linear, LinearWeightGrad; " +
			"L2 LeakyReLU 2x4 32 B by Linear, LinearWeightGrad"},
		{"bf16", Spec{Precision: levers.BF16}, "L0 Linear 2x4 half 16 B by LeakyReLUGrad; " +
			"L1 LeakyReLU 2x4 half 16 B by LinearWeightGrad; L1 Linear 2x4 half 16 B by LeakyReLUGrad; " +
			"L2 LeakyReLU 2x4 half 16 B by LinearWeightGrad; L2 Linear 2x4 half 16 B by LeakyReLUGrad; L2 LeakyReLU 2x4 half 16 B by MSEGrad"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := compileTrain(t, handModels[0], tc.spec)
			var parts []string
			var sum int64
			for _, v := range sc.SavedValues() {
				shape := strings.Trim(strings.ReplaceAll(fmt.Sprint(v.Shape), " ", "x"), "[]")
				half := ""
				if v.Half {
					half = " half"
				}
				parts = append(parts, fmt.Sprintf("%s %s %s%s %d B by %s", v.Block, v.Op, shape, half, v.Bytes, strings.Join(v.ReadBy, ", ")))
				sum += v.Bytes
			}
			if got := strings.Join(parts, "; "); got != tc.want {
				t.Errorf("saved values\n %s\nwant\n %s", got, tc.want)
			}
			if b := sc.Bytes().Saved; sum != b {
				t.Errorf("saved values add up to %d B, Bytes().Saved is %d", sum, b)
			}
		})
	}
}
