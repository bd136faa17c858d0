package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPlaceOffsets checks the arena's offsets on hand lifetimes: the
// largest first, each in the smallest gap that holds it among the values
// that meet it, else above them.
func TestPlaceOffsets(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ls      []lifetime // value: the index
		offsets []int
		elems   int
	}{
		// A layer's two temporaries (0 and 1) and the hidden state (2)
		// beside them, then the head's logits (3), larger than both: the
		// logits go at the bottom, the temporaries over them, the hidden
		// state above: the arena is the 320 alive at steps 1, 3 and 4.
		{"the logits after a layer's temporaries", []lifetime{{0, 0, 1, 128}, {1, 1, 2, 128}, {2, 0, 4, 64}, {3, 3, 4, 256}},
			[]int{0, 128, 256, 0}, 320},
		// Two values of 64 freed at step 1, apart in time from one of
		// 128 born at step 2: it lies over both.
		{"freed neighbours hold a larger value", []lifetime{{0, 0, 1, 64}, {1, 0, 1, 64}, {2, 2, 3, 128}},
			[]int{0, 64, 0}, 128},
		// At step 0 four values fill 512; at step 2 only 1 and 3 stay,
		// leaving gaps of 192 (where 0 was) and 128 (where 2 was): a value
		// of 64 born then takes the smaller.
		{"the smallest gap", []lifetime{{0, 0, 0, 192}, {1, 0, 2, 128}, {2, 0, 0, 128}, {3, 0, 2, 64}, {4, 2, 2, 64}},
			[]int{0, 192, 320, 448, 320}, 512},
		{"none", nil, []int{}, 0},
	} {
		offsets, elems := placeOffsets(tc.ls)
		if !slices.Equal(offsets, tc.offsets) || elems != tc.elems {
			t.Errorf("%s: offsets %v, arena %d; want %v, %d", tc.name, offsets, elems, tc.offsets, tc.elems)
		}
	}
}

// TestPlaceOffsetsNeverOverlap places random lifetimes and checks that two
// whose steps meet never share an element, that every offset is aligned
// and that the arena is at least the largest set alive at one step.
func TestPlaceOffsetsNeverOverlap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		ls := make([]lifetime, 1+r.IntN(60))
		for i := range ls {
			from := r.IntN(40)
			ls[i] = lifetime{value: i, from: from, to: from + r.IntN(8), elems: alignUp(1 + r.IntN(2000))}
		}
		offsets, elems := placeOffsets(ls)
		for i, a := range ls {
			if offsets[i]%arenaAlign != 0 || offsets[i]+a.elems > elems {
				t.Fatalf("trial %d: value %d at %d (%d elements), arena %d", trial, i, offsets[i], a.elems, elems)
			}
			for j, b := range ls[:i] {
				if a.meets(b) && offsets[i] < offsets[j]+b.elems && offsets[j] < offsets[i]+a.elems {
					t.Fatalf("trial %d: values %d and %d meet and share elements: %d+%d, %d+%d", trial, i, j, offsets[i], a.elems, offsets[j], b.elems)
				}
			}
		}
		if bound := liveBound(ls); elems < bound {
			t.Fatalf("trial %d: arena %d below the %d alive at one step", trial, elems, bound)
		}
	}
}

// liveBound returns the largest sum of elements of lifetimes alive at one
// step: no arena holding them is smaller.
func liveBound(ls []lifetime) int {
	delta := map[int]int{}
	for _, l := range ls {
		delta[l.from] += l.elems
		delta[l.to+1] -= l.elems
	}
	steps := make([]int, 0, len(delta))
	for s := range delta {
		steps = append(steps, s)
	}
	slices.Sort(steps)
	live, most := 0, 0
	for _, s := range steps {
		live += delta[s]
		most = max(most, live)
	}
	return most
}
