package fit

import (
	"testing"

	"gpuz/internal/bench"
	"gpuz/internal/cache"
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

// TestManagedOnePageBudget: the managed mode fits a budget that holds one
// page, its window of one page, and not a budget one byte short of it
// (issue 44 item 26: fit dropping the managed mode at one page passed
// every test, which tried a budget of 0 only).
func TestManagedOnePageBudget(t *testing.T) {
	_, p := smallPlanner(t, models.Linear, bench.TaskTrain)
	// The default page holds the whole region; 64 KiB pages part it.
	for _, page := range []int64{cache.DefaultPageSize, 64 << 10} {
		c := Candidate{Mode: bench.ModeManaged}
		if page != cache.DefaultPageSize {
			c.ManagedPage = page
		}
		for _, tc := range []struct {
			budget int64
			fits   bool
		}{{page - 1, false}, {page, true}, {2 * page, true}} {
			e, err := plan(p, c, tc.budget)
			if err != nil {
				t.Fatal(err)
			}
			fp := e.Plan.Footprint
			if want := min(int(tc.budget/page), fp.Pages); e.Fits != tc.fits || fp.Window != want {
				t.Errorf("pages of %d B, a budget of %d B: fits %t, %d of %d pages resident; want %t, %d",
					page, tc.budget, e.Fits, fp.Window, fp.Pages, tc.fits, want)
			}
			if page != cache.DefaultPageSize && fp.Pages < 3 {
				t.Errorf("pages of %d B: the region holds %d", page, fp.Pages)
			}
		}
	}
}
