package bench

import (
	"strings"
	"testing"
)

// TestHybridSearch lists the hybrid placements fit searches for three
// blocks: one boundary each, the host first and then the device first.
func TestHybridSearch(t *testing.T) {
	var got []string
	for _, c := range hybridSearch(Space{Blocks: 3, MinWindow: 1}) {
		got = append(got, c.Settings().Blocks)
	}
	want := "host:0,cuda:1-2 host:0-1,cuda:2 cuda:0,host:1-2 cuda:0-1,host:2"
	if strings.Join(got, " ") != want {
		t.Errorf("hybridSearch(3 blocks) = %v, want %s", got, want)
	}
}

// TestSearchOrder: fit searches the host's mode first, then the GPU's in
// the table's order; without a GPU, the host's alone.
func TestSearchOrder(t *testing.T) {
	for _, tt := range []struct {
		gpu  bool
		want string
	}{
		{false, "cpu"},
		{true, "cpu cuda cache hybrid managed"},
	} {
		var got []string
		for _, mc := range Search(Space{Blocks: 2, MinWindow: 1, Train: true}, tt.gpu) {
			if len(got) == 0 || got[len(got)-1] != string(mc.Mode) {
				got = append(got, string(mc.Mode))
			}
		}
		if g := strings.Join(got, " "); g != tt.want {
			t.Errorf("Search(gpu %v) modes = %s, want %s", tt.gpu, g, tt.want)
		}
	}
}
