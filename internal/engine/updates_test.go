package engine

import (
	"slices"
	"testing"

	"gorgonia.org/gorgonia"
)

// TestScheduleUpdatesWaitForReads: a block's update runs after the last
// step that produces one of its gradients and after the last step that
// reads its parameters, whichever is later, so that no step reads a weight
// the update already changed. A hand-made schedule of two blocks, each
// with one parameter: block 0's gradient is final at step 3, but step 4
// (a step of another block's backward, say) still reads block 0's
// weight: its update follows step 4. Block 1's gradient comes at step 2,
// after its last read at step 1: its update follows step 2. The updates
// are listed in the order they run.
func TestScheduleUpdatesWaitForReads(t *testing.T) {
	// Values: 0 and 2 the parameters of blocks 0 and 1, 1 and 3 their
	// gradients, 4 to 6 other results.
	values := make([]value, 7)
	for i := range values {
		values[i].block = -1
	}
	values[0].block, values[2].block = 0, 1
	// Each block trains one parameter (a block with none, all frozen, has
	// no update); the nodes themselves play no part.
	blocks := []Block{{Params: make([]*gorgonia.Node, 1)}, {Params: make([]*gorgonia.Node, 1)}}
	sc := &Schedule{spec: Spec{Blocks: blocks}, values: values, params: []int{0, 2}, grads: []int{1, 3},
		steps: []step{
			{out: 4, reads: []int{0}},
			{out: 5, reads: []int{1}},
			{out: 3},
			{out: 1},
			{out: 6, reads: []int{0}},
		}}
	sc.scheduleUpdates()
	if want := []update{{block: 1, after: 2}, {block: 0, after: 4}}; !slices.Equal(sc.updates, want) {
		t.Errorf("updates %+v, want %+v", sc.updates, want)
	}
}
