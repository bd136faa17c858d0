package report

import (
	"strings"
	"testing"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/fit"
	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
)

// TestRankOrderNote checks the note that explains a ranked row printed
// above a faster one (issue 44 item 11), and its absence when the times
// fall in order.
func TestRankOrderNote(t *testing.T) {
	entry := func(mode bench.Mode, p levers.Precision, seconds float64) fit.Entry {
		e := fit.Entry{Candidate: fit.Candidate{Mode: mode}}
		e.Precision = p
		e.Plan.Prediction = &bench.Prediction{Prediction: perfmodel.Prediction{Model: time.Duration(seconds * float64(time.Second))}}
		return e
	}
	fp32, bf16 := entry(bench.ModeCUDA, "", 1.2), entry(bench.ModeCUDA, levers.BF16, 1.0)
	note := rankOrderNote([]fit.Entry{fp32, bf16}, []int{1, 2})
	if !strings.Contains(note, "#1 ranks above the faster #2") || !strings.Contains(note, "#2 changes the results") {
		t.Errorf("note %q: want #1 above the faster #2, which changes the results", note)
	}
	if note := rankOrderNote([]fit.Entry{bf16, fp32}, []int{1, 2}); note != "" {
		t.Errorf("times in order: note %q, want none", note)
	}
}
