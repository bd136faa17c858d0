package fit

import (
	"slices"
	"testing"

	"gpuz/internal/levers"
)

// TestGradAccums: training searches 1 and each power of two that divides
// the batch, up to it; evaluation none.
func TestGradAccums(t *testing.T) {
	for _, tc := range []struct {
		train bool
		batch int
		want  []levers.GradAccum
	}{
		{true, 1, []levers.GradAccum{0}},
		{true, 2, []levers.GradAccum{0, 2}},
		{true, 4, []levers.GradAccum{0, 2, 4}},
		{true, 30, []levers.GradAccum{0, 2}},
		{true, 24, []levers.GradAccum{0, 2, 4, 8}},
		{false, 8, []levers.GradAccum{0}},
	} {
		if got := GradAccums(tc.train, tc.batch); !slices.Equal(got, tc.want) {
			t.Errorf("GradAccums(%v, %d) = %v, want %v", tc.train, tc.batch, got, tc.want)
		}
	}
	// Each candidate once per K, the placements and levers alike.
	one := Candidates(3, 1, true, true, "", nil, nil)
	three := Candidates(3, 1, true, true, "", nil, GradAccums(true, 4))
	if len(three) != 3*len(one) {
		t.Errorf("%d candidates with K of 1, 2 and 4, %d without: want three times", len(three), len(one))
	}
}
