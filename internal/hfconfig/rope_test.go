package hfconfig

import (
	"math"
	"slices"
	"testing"
)

// TestRopeInvFreqByHand checks the default inverse frequencies where they
// are known exactly: θ^(2i/d) is a power of ten, and its reciprocal is the
// float32 nearest 10^-k.
func TestRopeInvFreqByHand(t *testing.T) {
	tests := []struct {
		headDim int
		theta   float64
		want    []float32
	}{
		{8, 10000, []float32{1, 0.1, 0.01, 0.001}},
		{4, 10000, []float32{1, 0.01}},
		{4, 100, []float32{1, 0.1}},
		{2, 500000, []float32{1}},
	}
	for _, tt := range tests {
		c := Config{Arch: ArchLlama, HeadDim: tt.headDim, RopeTheta: tt.theta}
		if got := c.RopeInvFreq(); !slices.Equal(got, tt.want) {
			t.Errorf("head_dim %d, θ %g: RopeInvFreq() = %v, want %v", tt.headDim, tt.theta, got, tt.want)
		}
	}
	if got := (Config{Arch: ArchGPT2, HeadDim: 64}).RopeInvFreq(); got != nil {
		t.Errorf("GPT-2: RopeInvFreq() = %v, want nil", got)
	}
}

// TestRopeInvFreqDefault checks every default inverse frequency of
// Llama-3.2-1B's head (64, θ 500000) against the float64 formula: the
// float32 computation is within two float32 roundings of it.
func TestRopeInvFreqDefault(t *testing.T) {
	p, _ := presetNamed("llama-3.2-1b")
	c := p.Config
	c.RopeScaling = nil
	got := c.RopeInvFreq()
	if len(got) != 32 {
		t.Fatalf("%d frequencies, want 32", len(got))
	}
	for i, g := range got {
		want := 1 / math.Pow(500000, float64(2*i)/64)
		if rel := math.Abs(float64(g)-want) / want; rel > 2.5e-7 {
			t.Errorf("inv_freq[%d] = %g, the formula %g (relative error %.2g)", i, g, want, rel)
		}
	}
}

// TestRopeInvFreqLlama3 checks llama3 scaling's three bands on
// Llama-3.2-1B (factor 32, low_freq_factor 1, high_freq_factor 4,
// original_max_position_embeddings 8192): wavelengths under 8192/4 = 2048
// keep their frequency exactly, those over 8192/1 have it divided by 32
// exactly, and those between are interpolated,
// (1-s)·f/32 + s·f with s = (8192/λ - 1)/(4 - 1).
func TestRopeInvFreqLlama3(t *testing.T) {
	p, _ := presetNamed("llama-3.2-1b")
	scaled := p.Config.RopeInvFreq()
	plain := p.Config
	plain.RopeScaling = nil
	def := plain.RopeInvFreq()
	var high, mid, low int
	for i, f := range def {
		wavelen := 2 * math.Pi / float64(f)
		g := scaled[i]
		switch {
		case wavelen < 2048:
			high++
			if g != f {
				t.Errorf("high band [%d] (λ %.0f): %g, want it kept, %g", i, wavelen, g, f)
			}
		case wavelen > 8192:
			low++
			if g != f/32 {
				t.Errorf("low band [%d] (λ %.0f): %g, want %g/32 = %g", i, wavelen, g, f, f/32)
			}
		default:
			mid++
			s := (8192/wavelen - 1) / 3
			want := (1-s)*float64(f)/32 + s*float64(f)
			if rel := math.Abs(float64(g)-want) / want; rel > 1e-6 || !(g > f/32 && g < f) {
				t.Errorf("middle band [%d] (λ %.0f): %g, want %g between %g and %g", i, wavelen, g, want, f/32, f)
			}
		}
	}
	// θ^(i/32) crosses 2048/2π at i = 14.1 and 8192/2π at i = 17.5.
	if high != 15 || mid != 3 || low != 14 {
		t.Errorf("bands of %d, %d and %d frequencies, want 15, 3 and 14", high, mid, low)
	}
}
