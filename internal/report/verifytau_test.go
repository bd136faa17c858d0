package report

import (
	"strings"
	"testing"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/fit"
)

// TestVerifyTauNote: on the simulated GPU the verification's τ compares
// this host's measured times with the card's predicted ones, and its note
// says so; on a real device (or the host) it is the model against a
// measurement. Before, the sim note read as a check of the model
// (issue 44 item 15: "the τ = −0.67 that fit --verify prints on sim has no
// meaning there").
func TestVerifyTauNote(t *testing.T) {
	for _, tc := range []struct {
		name      string
		simulated bool
		want      string
		not       string
	}{
		{"sim", true, "on sim this compares the host with the card", "rank correlation of measured against predicted"},
		{"real", false, "rank correlation of measured against predicted (Kendall's τ): -0.67", "on sim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v fit.Verification
			for i := range 4 {
				v.Checks = append(v.Checks, fit.Check{
					Entry:     fit.Entry{Candidate: fit.Candidate{Mode: bench.ModeCUDA}},
					Rank:      i + 1,
					Measured:  time.Duration(i+1) * time.Second,
					Simulated: tc.simulated,
				})
			}
			v.Tau, v.TauPoints = -2.0/3, 4
			notes := strings.Join(verifyTable(v).notes, "\n")
			if !strings.Contains(notes, tc.want) || strings.Contains(notes, tc.not) {
				t.Errorf("notes:\n%s\nwant %q and not %q", notes, tc.want, tc.not)
			}
		})
	}
}
