package report

import (
	"fmt"
	"slices"
	"strings"

	"gpuz/internal/bench"
	"gpuz/internal/units"
)

// generated is a mode's generation figures over its timed epochs: the
// tokens each phase computed and the seconds it took, summed, and the
// mean time to the first token.
type generated struct {
	prefillTokens, decodeTokens   int
	prefillSeconds, decodeSeconds float64
	firstToken                    float64
}

// generatedOf sums the generation phases of a mode's timed epochs; ok is
// false when none has any.
func generatedOf(m bench.ModeResult) (g generated, ok bool) {
	n := 0
	for _, e := range m.Timed() {
		if e.Generation == nil {
			continue
		}
		p := e.Generation
		g.prefillTokens += p.PrefillTokens
		g.decodeTokens += p.DecodeTokens
		g.prefillSeconds += p.PrefillSeconds
		g.decodeSeconds += p.DecodeSeconds
		n++
	}
	if n == 0 {
		return g, false
	}
	g.firstToken = g.prefillSeconds / float64(n)
	return g, true
}

// perSecond returns tokens over seconds as a cell, "-" where none were timed.
func perSecond(tokens int, seconds float64) string {
	if tokens == 0 || seconds <= 0 {
		return na
	}
	return fmt.Sprintf("%.4g", float64(tokens)/seconds)
}

// generationColumns adds the generate task's columns, as llama-bench
// reports them: the prompt's tokens per second through the prefill
// (pp), the generated tokens per second through the decode passes (tg),
// and the time to the first token, then, where a mode is predicted, its
// predicted decode tokens per second; nothing for the other tasks.
func (a *analysis) generationColumns() {
	if bench.Task(a.r.Header.Task) != bench.TaskGenerate {
		return
	}
	a.col("prefill tok/s", false, func(f figures) string {
		g, ok := generatedOf(f.m)
		if !ok {
			return na
		}
		return perSecond(g.prefillTokens, g.prefillSeconds)
	})
	a.col("decode tok/s", false, func(f figures) string {
		g, ok := generatedOf(f.m)
		if !ok {
			return na
		}
		return perSecond(g.decodeTokens, g.decodeSeconds)
	})
	a.timeCol("1st token", func(f figures) (float64, bool) {
		g, ok := generatedOf(f.m)
		return g.firstToken, ok
	}, plainTime)
	if !a.predicted {
		return
	}
	a.col("pred. decode", false, func(f figures) string {
		g := generationOf(f.pred)
		if g == nil {
			return na
		}
		return sig(g.DecodeTokensPerSecond(), 3)
	})
}

// generationNotes are the notes of a generation: what its rates count,
// and whether every mode that completed generated the same tokens (greedy
// decoding of one model: they must), naming the modes that differ.
func (a *analysis) generationNotes() []string {
	h := a.r.Header
	if bench.Task(h.Task) != bench.TaskGenerate {
		return nil
	}
	lines := []string{fmt.Sprintf("prefill: the %d prompt tokens of each sequence in one pass, to the first generated token; decode: each further token one pass at a time; tok/s count every sequence's tokens", h.Prompt)}
	var ref *bench.ModeResult
	var differ []string
	for i := range a.r.Modes {
		m := &a.r.Modes[i]
		if m.Status.Kind != bench.StatusOK || m.Generated == nil {
			continue
		}
		if ref == nil {
			ref = m
			continue
		}
		if !slices.EqualFunc(m.Generated, ref.Generated, slices.Equal) {
			differ = append(differ, string(m.Mode))
		}
	}
	switch {
	case ref == nil:
	case differ != nil:
		lines = append(lines, fmt.Sprintf("generated tokens differ from %s's in %s", ref.Mode, strings.Join(differ, ", ")))
	default:
		lines = append(lines, "generated tokens: "+tokensText(ref.Generated))
	}
	return lines
}

// tokensText writes the first sequence's generated ids, the first 16 of
// them, and says they are the same in every mode that completed.
func tokensText(seqs [][]int) string {
	first := seqs[0]
	ids := make([]string, 0, 16)
	for _, id := range first[:min(len(first), 16)] {
		ids = append(ids, fmt.Sprint(id))
	}
	s := strings.Join(ids, " ")
	if len(first) > 16 {
		s += " …"
	}
	what := "the same in every mode that completed"
	if len(seqs) > 1 {
		what = fmt.Sprintf("sequence 1 of %d; every sequence's the same in every mode that completed", len(seqs))
	}
	return s + " (" + what + ")"
}

// generationTable is a generation plan's table of each mode's passes, in
// place of the copies per epoch: the bytes a decode pass copies between
// host and device, and where a mode is predicted, the prompt's pass (the
// time to the first token), the decode passes' tokens per second and what
// bounds them.
func generationTable(p bench.MemoryPlan, wide bool) table {
	t := table{columns: []column{{"mode", true}, {"placement", true}, {"bus/token", false}, {"1st token (s)", false}, {"decode tok/s", false}, {"bound by", true}}}
	var modes []string
	var preds []*bench.Prediction
	for _, m := range p.Modes {
		if m.Device == "" {
			continue
		}
		modes, preds = append(modes, string(m.Mode)), append(preds, m.Prediction)
		row := []string{string(m.Mode), m.Placement.Describe(m.Footprint, p.Blocks, tableForm(wide))}
		g := generationOf(m.Prediction)
		switch {
		case g == nil:
			row = append(row, na, na, na, na)
		default:
			bus := units.Bytes(g.DecodeBusBytes)
			if !m.Mode.Copies() {
				bus = na
			}
			row = append(row, bus, sig(g.Prefill.Model.Seconds(), 3), sig(g.DecodeTokensPerSecond(), 3), g.DecodeLimit)
		}
		t.rows = append(t.rows, row)
	}
	t.notes = []string{fmt.Sprintf("bus/token: the bytes one decode pass (a token of every sequence) copies between host and device; decode at a full cache of %s; 1st token: the prompt's pass",
		plural(int64(p.Header.Context), "position"))}
	profiles := make([]string, len(preds))
	for i, pr := range preds {
		if pr != nil {
			profiles[i] = pr.Profile
		}
	}
	if on := groupModes(profiles, modes); on != "" {
		t.notes = append(t.notes, "predicted on "+on+", a hybrid placement's host layers on the host profile (--host-profile), not measured; docs/model.md")
	} else {
		t.notes = append(t.notes, "no mode predicted: a device profile (--device sim:PROFILE) predicts the GPU modes, --host-profile the cpu mode and a hybrid placement's host layers")
	}
	return t
}

// generationOf is a prediction's generation passes, nil without them.
func generationOf(p *bench.Prediction) *bench.GenerationPrediction {
	if p == nil {
		return nil
	}
	return p.Generation
}
