package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestProgressOnlyOnATerminal runs the small linear workload twice. With a
// standard error that is not a terminal, nothing is written there. With
// one (a fake: a buffer marked ErrTTY, shared with standard output as on a
// real terminal), a progress line with the epoch and batch counters is
// drawn (the last batch ends it: its line is not drawn), it is erased
// (carriage return, spaces, carriage return) before
// each epoch line and at the end, and once the drawings are taken out the
// report's lines are whole.
func TestProgressOnlyOnATerminal(t *testing.T) {
	opts, out, errOut := runSmallLinear(t, func(o *WorkloadOptions) { o.Sizes = map[string]int{"epochs": 2} })
	if errOut.Len() != 0 || strings.Contains(out.String(), "\r") {
		t.Fatalf("not a terminal: stderr %q, stdout has a carriage return: %v", errOut, strings.Contains(out.String(), "\r"))
	}

	var term bytes.Buffer
	opts.IO = &IOStreams{Out: &term, ErrOut: &term, ErrTTY: true}
	mustRun(t, opts)
	got := term.String()
	for _, want := range []string{"\rcpu: epoch 1/2, batch 1/2", "(1/4)", "\rcpu: epoch 2/2, batch 1/2", "(3/4)"} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, got)
		}
	}
	erased := regexp.MustCompile(`\r +\r(train: [01] )`)
	if n := len(erased.FindAllString(got, -1)); n != 2 {
		t.Errorf("%d epoch lines follow an erased progress line, want 2:\n%q", n, got)
	}
	// Taking out every drawing and erasure leaves the report as it would
	// be without a terminal: no counters, each epoch line at a line start.
	plain := regexp.MustCompile(`(\r[^\r\n]*)*\r`).ReplaceAllString(got, "")
	if strings.Contains(plain, "cpu: epoch") || !strings.Contains(plain, "\ntrain: 0 ") || !strings.Contains(plain, "\ntrain: 1 ") {
		t.Errorf("report with the progress taken out:\n%s", plain)
	}
	if len(strings.Split(plain, "\n")) != len(strings.Split(out.String(), "\n")) {
		t.Errorf("the report has %d lines on a terminal, %d without:\n%s", len(strings.Split(plain, "\n")), len(strings.Split(out.String(), "\n")), plain)
	}
}
