package report

import (
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"gpuz/internal/bench"
	"gpuz/internal/fit"
	"gpuz/internal/perfmodel"
)

// hostile are strings from a file that must not reach a terminal raw: an
// escape sequence that clears the screen, BEL, CR (which overwrites the
// line), a bidi override, a C1 CSI raw (an 8-bit terminal's escape) and
// encoded.
var hostile = []struct{ name, s string }{
	{"ESC [2J", "x\x1b[2Jy"},
	{"BEL", "x\ay"},
	{"CR", "x\ry"},
	{"bidi override", "x\u202ey"},
	{"C1 CSI byte", "x\x9b2Jy"},
	{"C1 CSI rune", "x\u009b2Jy"},
}

// rawControl returns the first control character in out that is not a
// newline (C0, DEL, C1, a bidi override or isolate, a byte that is not
// UTF-8), quoted, or "" if there is none.
func rawControl(out string) string {
	for i, r := range out {
		switch {
		case r == '\n':
		case r == utf8.RuneError && !strings.HasPrefix(out[i:], "\uFFFD"),
			r < 0x20, r >= 0x7f && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return out[max(0, i-10):min(len(out), i+10)]
		}
	}
	return ""
}

// TestProfilesEscapeControls checks that a profile's name and title from a
// file (--host-profile, sim:FILE) reach gpuz devices --profiles' table
// with their control characters escaped.
func TestProfilesEscapeControls(t *testing.T) {
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			p := perfmodel.HostProfile(100e9, 10e9)
			p.Name, p.Title = "name"+h.s, "title"+h.s
			got := written(t, func(w io.Writer) error { return WriteProfiles(w, []perfmodel.Profile{p}) })
			if raw := rawControl(got); raw != "" {
				t.Errorf("WriteProfiles printed a raw control character near %q:\n%q", raw, got)
			}
			if !strings.Contains(got, "title") {
				t.Errorf("WriteProfiles lost the title:\n%q", got)
			}
		})
	}
}

// TestCompareEscapesControls checks that gpuz compare prints the files'
// names and the benchmark names they hold (headings, row labels) with
// their control characters escaped.
func TestCompareEscapesControls(t *testing.T) {
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			cfgs := []string{
				"Gpuz/workload=linear" + h.s + "/task=train/mode=cpu" + h.s + "/device=host/scale=small",
				"Other" + h.s + "/x=" + h.s,
			}
			f := func(name string) RunFile {
				r := RunFile{Name: name + h.s}
				for _, c := range cfgs {
					for _, s := range []float64{1, 1.1, 0.9, 1.05, 0.95} {
						r.add(c, s)
					}
				}
				return r
			}
			got := written(t, func(w io.Writer) error { return WriteCompare(w, f("a.json"), f("b.json")) })
			if raw := rawControl(got); raw != "" {
				t.Errorf("WriteCompare printed a raw control character near %q:\n%q", raw, got)
			}
		})
	}
}

// TestPlanAndFitTitlesEscapeControls checks that plan's and fit's first
// lines print the model's name (an llm's file or directory) and the
// device's name escaped, as the run's header does, and fit its command
// lines, which hold --model's path (issue 44 item 2: plan and fit printed
// them raw), as text and as Markdown.
func TestPlanAndFitTitlesEscapeControls(t *testing.T) {
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			p := linearPlan
			p.Header.Model = "llm model" + h.s
			cpu := fit.Entry{Candidate: fit.Candidate{Mode: bench.ModeCPU}, Fits: true, Command: "gpuz llm train cpu --model 'model" + h.s + "'"}
			r := fit.Result{Header: p.Header, Device: "sim:card" + h.s, Blocks: 1, Unranked: []fit.Entry{cpu}}
			for _, f := range []Format{FormatText, FormatMarkdown} {
				for what, write := range map[string]func(io.Writer) error{
					"plan": func(w io.Writer) error { return WritePlanAs(w, p, Options{Format: f}) },
					"fit":  func(w io.Writer) error { return WriteFitAs(w, r, Options{Format: f}) },
				} {
					got := written(t, write)
					if raw := rawControl(got); raw != "" {
						t.Errorf("%s as %s printed a raw control character near %q:\n%.300q", what, f, raw, got)
					}
					if !strings.Contains(got, "llm model") || what == "fit" && !strings.Contains(got, "--model 'model") {
						t.Errorf("%s as %s lost the model's name:\n%.300q", what, f, got)
					}
				}
			}
		})
	}
}
