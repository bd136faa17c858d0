package main

import (
	"strings"
	"testing"
	"time"

	"gpuz/internal/fit"
)

// TestSearchProgress steps a search's progress on a clock of its own: a
// log gets nothing from a search shorter than slowLineEvery and then a
// line each slowLineEvery; a terminal one line, redrawn in place at most
// ten times a second, and erased at the end.
func TestSearchProgress(t *testing.T) {
	pr := fit.Progress{Phase: "planning configurations", Done: 120, Total: 2472}
	tests := []struct {
		name  string
		tty   bool
		steps []time.Duration // the clock at each update, from the start
		want  string
	}{
		{"a short search logs nothing", false, []time.Duration{time.Second, 29 * time.Second}, ""},
		{"a long search logs a line each 30 s", false, []time.Duration{10 * time.Second, 31 * time.Second, 40 * time.Second, 62 * time.Second},
			"gpuz fit: planning configurations, 120 of 2472 (31s)\ngpuz fit: planning configurations, 120 of 2472 (1m2s)\n"},
		{"a terminal's line is redrawn and erased", true, []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond, 2 * time.Second},
			"\r\033[Kgpuz fit: planning configurations, 120 of 2472 (0s)\r\033[Kgpuz fit: planning configurations, 120 of 2472 (2s)\r\033[K"},
		{"a terminal's line is not drawn for a quick search", true, []time.Duration{50 * time.Millisecond}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			start := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
			clock := start
			p := newSearchProgress(&out, tc.tty)
			p.now = func() time.Time { return clock }
			p.start, p.last = start, start
			for _, at := range tc.steps {
				clock = start.Add(at)
				p.update(pr)
			}
			p.clear()
			if got := out.String(); got != tc.want {
				t.Errorf("wrote %q, want %q", got, tc.want)
			}
		})
	}
}
