package perfmodel

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestClassOf names the class of kernels of each workload, the llm
// workload's among them, whatever their case, and knows no other name.
func TestClassOf(t *testing.T) {
	for _, tc := range []struct {
		kernel, class string
	}{
		{"Linear", ClassProducts},
		{"Projection", ClassProducts},
		{"Conv1D", ClassProducts},
		{"conv1dinputgrad", ClassProducts},
		{"Conv1DWeightGrad", ClassProducts},
		{"Conv2dWeightGrad", ClassConvolutions},
		{"AttentionMixValueGrad", ClassAttention},
		{"LayerNorm", ClassNormalisation},
		{"RMSNorm", ClassNormalisation},
		{"RMSNormInputGrad", ClassNormalisation},
		{"RMSNormWeightGrad", ClassNormalisation},
		{"Rotary", ClassElementwise},
		{"RotaryGrad", ClassElementwise},
		{"SwiGLU", ClassElementwise},
		{"SwiGLUGrad", ClassElementwise},
		{"GELUTanh", ClassElementwise},
		{"GELUTanhGrad", ClassElementwise},
		{"AddPositions", ClassElementwise},
		{"PositionsGrad", ClassElementwise},
		{"TokenEmbedding", ClassElementwise},
		{"EmbeddingGrad", ClassElementwise},
		{"AdamStep", ClassElementwise},
		{"Convert16", ClassElementwise},
		{"Unknown", ""},
		{"", ""},
	} {
		class, ok := ClassOf(tc.kernel)
		if class != tc.class || ok != (tc.class != "") {
			t.Errorf("ClassOf(%q) = %q, %v; want %q", tc.kernel, class, ok, tc.class)
		}
	}
}

// TestClassesAreDisjoint: no kernel is in two classes, or in a class and
// among the element-wise kernels, and every dense kernel of
// DefaultEfficiency is in a class (Fit keeps Dense: no sample decides
// it).
func TestClassesAreDisjoint(t *testing.T) {
	seen := map[string]string{}
	note := func(kernel, class string) {
		k := strings.ToLower(kernel)
		if other, ok := seen[k]; ok {
			t.Errorf("kernel %s is in %s and in %s", kernel, other, class)
		}
		seen[k] = class
	}
	for _, c := range KernelClasses() {
		for _, k := range c.Kernels {
			note(k, c.Name)
		}
	}
	for _, k := range ElementwiseKernels() {
		note(k, ClassElementwise)
	}
	for _, k := range DefaultEfficiency.DenseKernels {
		if c, _ := ClassOf(k); c != ClassProducts && c != ClassConvolutions {
			t.Errorf("dense kernel %s is in class %q, want products or convolutions", k, c)
		}
	}
}

// TestOpClassesAreKnown: every class that an op's spec declares (the
// generated opClasses) is one of KernelClasses or the element-wise class,
// so that no op's kernels fall out of ClassOf.
func TestOpClassesAreKnown(t *testing.T) {
	for class, kernels := range opClasses {
		known := class == ClassElementwise || slices.ContainsFunc(KernelClasses(), func(c KernelClass) bool { return c.Name == class })
		if !known || len(kernels) == 0 {
			t.Errorf("ops declare class %q for %v, which the model does not know", class, kernels)
		}
		for _, k := range kernels {
			if got, _ := ClassOf(k); got != class {
				t.Errorf("ClassOf(%s) = %q, its op declares %q", k, got, class)
			}
		}
	}
}

// TestFittedClassesGainNewKernels: a profile fitted before the products
// and normalisation classes grew (its classes name Linear's and
// LayerNorm's kernels only) prices Projection, Conv1D and RMSNorm at its
// classes' factors, a kernel that another of its classes names stays
// there, and the stored profile is not changed.
func TestFittedClassesGainNewKernels(t *testing.T) {
	products := KernelClass{Name: ClassProducts, Kernels: []string{"Gemm", "Linear", "LinearInputGrad", "LinearWeightGrad"},
		Compute: 0.5, Bandwidth: 0.4, Overhead: 300 * time.Nanosecond}
	norms := KernelClass{Name: ClassNormalisation, Kernels: []string{"LayerNorm", "LayerNormInputGrad", "LayerNormWeightGrad"},
		Compute: 0.2, Bandwidth: 0.6, Overhead: 900 * time.Nanosecond}
	mine := KernelClass{Name: "mine", Kernels: []string{"conv1d"}, Compute: 0.9, Bandwidth: 0.9, Overhead: time.Microsecond}
	p := Profile{Name: "old", FP32: 1e11, MemBandwidth: 1e10, KernelOverhead: 100 * time.Nanosecond,
		Fitted: &Efficiency{Dense: 0.7, Elementwise: 0.3, Bandwidth: 0.5, Copy: 0.8,
			Classes: []KernelClass{products, norms, mine}}}
	stored := slices.Clone(p.Fitted.Classes[0].Kernels)
	for _, tc := range []struct {
		kernel string
		want   KernelClass
	}{
		{"Linear", products}, {"Projection", products}, {"Conv1DInputGrad", products}, {"Conv1DWeightGrad", products},
		{"Conv1D", mine}, {"LayerNorm", norms}, {"RMSNorm", norms}, {"RMSNormWeightGrad", norms},
	} {
		c, b, o := p.KernelFactors(tc.kernel)
		if c != tc.want.Compute || b != tc.want.Bandwidth || o != tc.want.Overhead {
			t.Errorf("%s: factors %g, %g, %v; want %s's %g, %g, %v", tc.kernel, c, b, o, tc.want.Name, tc.want.Compute, tc.want.Bandwidth, tc.want.Overhead)
		}
	}
	if c, b, o := p.KernelFactors("Rotary"); c != 0.3 || b != 0.5 || o != 100*time.Nanosecond {
		t.Errorf("Rotary: factors %g, %g, %v; want the element-wise 0.3, 0.5, 100ns", c, b, o)
	}
	if !slices.Equal(p.Fitted.Classes[0].Kernels, stored) || len(p.Fitted.Classes[1].Kernels) != 3 {
		t.Errorf("stored classes changed: %+v", p.Fitted.Classes)
	}
}
