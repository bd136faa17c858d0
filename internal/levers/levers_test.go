package levers

import "testing"

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
