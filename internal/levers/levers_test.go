package levers

import (
	"slices"
	"testing"
)

// TestRecompute: every name a flag may give reads back as itself, "" is
// none, and anything else is refused naming the values.
func TestRecompute(t *testing.T) {
	for _, tc := range []struct {
		in      Recompute
		setting Recompute
		on      bool
	}{
		{"", RecomputeNone, false},
		{RecomputeNone, RecomputeNone, false},
		{RecomputeBlocks, RecomputeBlocks, true},
	} {
		if got := tc.in.Setting(); got != tc.setting {
			t.Errorf("%q.Setting() = %q, want %q", tc.in, got, tc.setting)
		}
		if got := tc.in.String(); got != string(tc.setting) {
			t.Errorf("%q.String() = %q, want %q", tc.in, got, tc.setting)
		}
		if got := tc.in.On(); got != tc.on {
			t.Errorf("%q.On() = %v, want %v", tc.in, got, tc.on)
		}
		if err := tc.in.Validate(); err != nil {
			t.Errorf("%q.Validate() = %v", tc.in, err)
		}
	}
	for _, r := range Recomputes() {
		if got, err := ParseRecompute(string(r)); err != nil || got != r {
			t.Errorf("ParseRecompute(%q) = %q, %v", r, got, err)
		}
	}
	for _, bad := range []string{"", "all", "Blocks", " blocks"} {
		_, err := ParseRecompute(bad)
		if want := `unknown recompute "` + bad + `" (want none or blocks)`; err == nil || err.Error() != want {
			t.Errorf("ParseRecompute(%q): %v, want %s", bad, err, want)
		}
	}
	if err := Recompute("all").Validate(); err == nil {
		t.Error(`Recompute("all").Validate() is nil`)
	}
}

// TestPrecision: every name a flag may give reads back as itself, "" is
// fp32, only bf16 and fp16 are 16-bit, and anything else is refused naming
// the values.
func TestPrecision(t *testing.T) {
	for _, tc := range []struct {
		in      Precision
		setting Precision
		half    bool
	}{
		{"", FP32, false},
		{FP32, FP32, false},
		{BF16, BF16, true},
		{FP16, FP16, true},
	} {
		if got := tc.in.Setting(); got != tc.setting {
			t.Errorf("%q.Setting() = %q, want %q", tc.in, got, tc.setting)
		}
		if got := tc.in.String(); got != string(tc.setting) {
			t.Errorf("%q.String() = %q, want %q", tc.in, got, tc.setting)
		}
		if got := tc.in.Half(); got != tc.half {
			t.Errorf("%q.Half() = %v, want %v", tc.in, got, tc.half)
		}
		if err := tc.in.Validate(); err != nil {
			t.Errorf("%q.Validate() = %v", tc.in, err)
		}
	}
	for _, p := range Precisions() {
		if got, err := ParsePrecision(string(p)); err != nil || got != p {
			t.Errorf("ParsePrecision(%q) = %q, %v", p, got, err)
		}
	}
	for _, bad := range []string{"", "fp8", "BF16", "fp32 "} {
		_, err := ParsePrecision(bad)
		if want := `unknown precision "` + bad + `" (want fp32, bf16 or fp16)`; err == nil || err.Error() != want {
			t.Errorf("ParsePrecision(%q): %v, want %s", bad, err, want)
		}
		if err := Precision(bad).Validate(); bad != "" && err == nil {
			t.Errorf("Precision(%q).Validate() = nil", bad)
		}
	}
}

func TestAttention(t *testing.T) {
	for _, tc := range []struct {
		in, def, want Attention
		fused         bool
	}{
		{"", AttentionEager, AttentionEager, false},
		{"", AttentionFused, AttentionFused, true},
		{AttentionEager, AttentionFused, AttentionEager, false},
		{AttentionFused, AttentionEager, AttentionFused, true},
	} {
		got := tc.in.Or(tc.def)
		if got != tc.want || got.Fused() != tc.fused {
			t.Errorf("%q.Or(%q) = %q (fused %v), want %q (fused %v)", tc.in, tc.def, got, got.Fused(), tc.want, tc.fused)
		}
		if err := tc.in.Validate(); err != nil {
			t.Errorf("%q.Validate() = %v", tc.in, err)
		}
	}
	for _, a := range Attentions() {
		if got, err := ParseAttention(string(a)); err != nil || got != a {
			t.Errorf("ParseAttention(%q) = %q, %v", a, got, err)
		}
	}
	for _, bad := range []string{"", "flash", "Fused"} {
		_, err := ParseAttention(bad)
		if want := `unknown attention "` + bad + `" (want eager or fused)`; err == nil || err.Error() != want {
			t.Errorf("ParseAttention(%q): %v, want %s", bad, err, want)
		}
		if err := Attention(bad).Validate(); bad != "" && err == nil {
			t.Errorf("Attention(%q).Validate() = nil", bad)
		}
	}
}

// TestSetGiven: a Set names the levers it sets away from their zero
// value, in its fields' order, and none when it is zero.
func TestSetGiven(t *testing.T) {
	for _, tc := range []struct {
		s    Set
		want []Lever
	}{
		{Set{}, nil},
		{Set{Precision: BF16}, []Lever{LeverPrecision}},
		{Set{LoRA: LoRA{Rank: 4}, Recompute: RecomputeBlocks}, []Lever{LeverRecompute, LeverLoRA}},
		{Set{Recompute: RecomputeNone, Precision: FP32, Attention: AttentionFused, LoRA: LoRA{Rank: 1}}, []Lever{LeverRecompute, LeverPrecision, LeverAttention, LeverLoRA}},
	} {
		if got := tc.s.Given(); !slices.Equal(got, tc.want) {
			t.Errorf("%+v.Given() = %v, want %v", tc.s, got, tc.want)
		}
	}
}
