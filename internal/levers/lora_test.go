package levers

import (
	"slices"
	"testing"
)

// TestLoRA checks the setting's scale, its text, its targets as a list and
// what Validate refuses, each with the message a user reads.
func TestLoRA(t *testing.T) {
	for _, tc := range []struct {
		l       LoRA
		scale   float64
		text    string
		targets []string
		err     string
	}{
		{l: LoRA{}, scale: 1, text: "off"},
		{l: LoRA{Rank: 16}, scale: 1, text: "R=16 α=16"},
		{l: LoRA{Rank: 8, Alpha: 32, Targets: "q_proj, v_proj"}, scale: 4, text: "R=8 α=32 q_proj, v_proj", targets: []string{"q_proj", "v_proj"}},
		{l: LoRA{Rank: 4, Alpha: 2, Targets: AllLinear}, scale: 0.5, text: "R=4 α=2 all-linear", targets: []string{AllLinear}},
		{l: LoRA{Rank: -1}, err: "--lora must be 0 (off) or a rank from 1 to 65536, got -1"},
		{l: LoRA{Rank: MaxLoRARank}, scale: 1, text: "R=65536 α=65536"}, // the bound is a rank (issue 44 item 24)
		{l: LoRA{Rank: MaxLoRARank + 1}, err: "--lora must be 0 (off) or a rank from 1 to 65536, got 65537"},
		{l: LoRA{Rank: 4, Alpha: -2}, err: "--lora-alpha must be a positive number, got -2"},
		{l: LoRA{Alpha: 2}, err: "--lora-alpha and --lora-targets need --lora R (a rank above 0)"},
		{l: LoRA{Targets: "q_proj"}, err: "--lora-alpha and --lora-targets need --lora R (a rank above 0)"},
		{l: LoRA{Rank: 4, Targets: "q_proj,,v_proj"}, err: `--lora-targets "q_proj,,v_proj" has an empty name`},
		{l: LoRA{Rank: 4, Targets: "all-linear,q_proj"}, err: "--lora-targets: all-linear stands alone, not in a list"},
	} {
		err := tc.l.Validate()
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%+v: Validate() = %v, want %s", tc.l, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%+v: Validate() = %v", tc.l, err)
		}
		if tc.l.On() && tc.l.Scale() != tc.scale {
			t.Errorf("%+v: scale %g, want %g", tc.l, tc.l.Scale(), tc.scale)
		}
		if got := tc.l.String(); got != tc.text {
			t.Errorf("%+v: %q, want %q", tc.l, got, tc.text)
		}
		if got, _ := tc.l.TargetList(); !slices.Equal(got, tc.targets) {
			t.Errorf("%+v: targets %q, want %q", tc.l, got, tc.targets)
		}
	}
}
