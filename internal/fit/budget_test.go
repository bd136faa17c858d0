package fit

import (
	"testing"

	"gpuz/internal/bench"
	"gpuz/internal/models"
)

// TestSearchBudgetRules: with the whole device taken (a budget of 0) the
// cpu, which needs no device, still fits and is recommended, and nothing
// on the device fits: the managed mode, whose budget then holds no page,
// included.
func TestSearchBudgetRules(t *testing.T) {
	opts := options(t, models.Linear, models.ScaleSmall, bench.TaskTrain)
	opts.TakeBytes = 8 << 30
	r, err := Search(opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Budget != 0 || !r.CPU.Fits || len(r.Ranked) == 0 || r.Ranked[0].Mode != bench.ModeCPU {
		t.Fatalf("budget %d: cpu fits %t, ranked first %q; want a budget of 0, the cpu fitting and first", r.Budget, r.CPU.Fits, r.Ranked[0].Candidate)
	}
	for _, e := range append(r.Ranked, r.Unranked...) {
		if e.Mode != bench.ModeCPU {
			t.Errorf("%s fits a budget of 0", e.Candidate)
		}
	}
}
