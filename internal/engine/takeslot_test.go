package engine

import (
	"slices"
	"testing"
)

// TestTakeSlot checks the arena's slot choice: the smallest free slot
// that holds the value, else the largest free slot grown to it (adding
// the difference, where a new slot would add the whole value: the head's
// logits after a layer's temporaries), else a new slot.
func TestTakeSlot(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sizes      []int
		free       []int
		need       int
		slot       int
		wantSizes  []int
		wantFreeed []int
	}{
		{"smallest that holds it", []int{50, 300, 200}, []int{0, 1, 2}, 150, 2, []int{50, 300, 200}, []int{0, 1}},
		{"the largest grown", []int{100, 120, 80}, []int{0, 1, 2}, 500, 1, []int{100, 500, 80}, []int{0, 2}},
		{"none free: a new slot", []int{100}, nil, 40, 1, []int{100, 40}, nil},
	} {
		sizes, free := slices.Clone(tc.sizes), slices.Clone(tc.free)
		got := takeSlot(&sizes, &free, tc.need)
		if got != tc.slot || !slices.Equal(sizes, tc.wantSizes) || !slices.Equal(free, tc.wantFreeed) {
			t.Errorf("%s: slot %d, sizes %v, free %v; want %d, %v, %v", tc.name, got, sizes, free, tc.slot, tc.wantSizes, tc.wantFreeed)
		}
	}
}
