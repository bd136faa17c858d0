package plot

import (
	"slices"

	"gpuz/internal/report"
	"gpuz/internal/termsafe"
)

// escaped returns c with every text drawn escaped by termsafe: the names
// in a chart come from a results file (the model's, the device's, a
// sweep's settings), and a control character in one (ESC, BEL) made the
// SVG invalid XML that viewers refuse, and reached the terminal of whoever
// printed it.
func (c Chart) escaped() Chart {
	c.Title, c.XLabel, c.YLabel, c.Unit = termsafe.String(c.Title), termsafe.String(c.XLabel), termsafe.String(c.YLabel), termsafe.String(c.Unit)
	c.Bars = escapedEach(c.Bars, func(b *Bar) { b.Label, b.Status = termsafe.String(b.Label), termsafe.String(b.Status) })
	c.Lines = escapedEach(c.Lines, func(l *Line) {
		l.Label = termsafe.String(l.Label)
		l.Failures = escapedEach(l.Failures, func(f *Failure) { f.Status = termsafe.String(f.Status) })
	})
	c.Bands = escapedEach(c.Bands, func(b *Band) { b.Label = termsafe.String(b.Label) })
	return c
}

// escapedPicture returns pic with every text drawn escaped by termsafe,
// as Chart.escaped: a memory picture's title and panels name the model,
// which an llm workload reads from its config.json.
func escapedPicture(pic report.MemoryPicture) report.MemoryPicture {
	pic.Title = termsafe.String(pic.Title)
	pic.Categories = termsafe.Strings(pic.Categories)
	pic.Panels = escapedEach(pic.Panels, func(p *report.MemoryPanel) {
		p.Title = termsafe.String(p.Title)
		p.Ticks = escapedEach(p.Ticks, func(t *report.PictureTick) { t.Label = termsafe.String(t.Label) })
	})
	return pic
}

// escapedEach returns a copy of s with escape applied to each element in
// place: s itself, which the caller's chart or picture shares, is left as
// it was.
func escapedEach[T any](s []T, escape func(*T)) []T {
	s = slices.Clone(s)
	for i := range s {
		escape(&s[i])
	}
	return s
}
