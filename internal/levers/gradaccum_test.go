package levers

import "testing"

// TestGradAccum: K reads back as itself from a positive decimal, 0 is 1
// and off, anything else is refused in one line; a batch K does not
// divide is refused naming both.
func TestGradAccum(t *testing.T) {
	for _, tc := range []struct {
		in      string
		k       GradAccum
		setting GradAccum
		on      bool
	}{
		{"1", 1, 1, false},
		{"2", 2, 2, true},
		{"1048576", MaxGradAccum, MaxGradAccum, true},
	} {
		k, err := ParseGradAccum(tc.in)
		if err != nil || k != tc.k || k.Setting() != tc.setting || k.On() != tc.on || k.String() != tc.in {
			t.Errorf("ParseGradAccum(%q) = %d (setting %d, on %v, %q), %v", tc.in, k, k.Setting(), k.On(), k.String(), err)
		}
	}
	if GradAccum(0).Setting() != 1 || GradAccum(0).On() || GradAccum(0).String() != "1" || GradAccum(0).Validate() != nil {
		t.Error("the zero GradAccum is not 1, off and valid")
	}
	for _, bad := range []string{"", "0", "-1", "+2", "02", "1_0", "0x2", "2.0", "1048577", "99999999999999999999"} {
		if _, err := ParseGradAccum(bad); err == nil {
			t.Errorf("ParseGradAccum(%q) accepted", bad)
		}
	}
	if GradAccum(-1).Validate() == nil {
		t.Error("GradAccum(-1).Validate() is nil")
	}
	for _, tc := range []struct {
		k           GradAccum
		batch, want int
		err         string
	}{
		{0, 8, 8, ""},
		{2, 8, 4, ""},
		{8, 8, 1, ""},
		{3, 8, 0, "--grad-accum 3: the batch (8) is not a multiple of it"},
		{16, 8, 0, "--grad-accum 16: the batch (8) is not a multiple of it"},
	} {
		got, err := tc.k.MicroBatch(tc.batch)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("GradAccum(%d).MicroBatch(%d): %v, want %s", tc.k, tc.batch, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("GradAccum(%d).MicroBatch(%d) = %d, %v, want %d", tc.k, tc.batch, got, err, tc.want)
		}
	}
}
