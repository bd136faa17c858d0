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
	c.Bars = slices.Clone(c.Bars)
	for i := range c.Bars {
		c.Bars[i].Label, c.Bars[i].Status = termsafe.String(c.Bars[i].Label), termsafe.String(c.Bars[i].Status)
	}
	c.Lines = slices.Clone(c.Lines)
	for i := range c.Lines {
		l := &c.Lines[i]
		l.Label = termsafe.String(l.Label)
		l.Failures = slices.Clone(l.Failures)
		for j := range l.Failures {
			l.Failures[j].Status = termsafe.String(l.Failures[j].Status)
		}
	}
	c.Bands = slices.Clone(c.Bands)
	for i := range c.Bands {
		c.Bands[i].Label = termsafe.String(c.Bands[i].Label)
	}
	return c
}

// escapedPicture returns pic with every text drawn escaped by termsafe,
// as Chart.escaped: a memory picture's title and panels name the model,
// which an llm workload reads from its config.json.
func escapedPicture(pic report.MemoryPicture) report.MemoryPicture {
	pic.Title = termsafe.String(pic.Title)
	pic.Categories = termsafe.Strings(pic.Categories)
	pic.Panels = slices.Clone(pic.Panels)
	for i := range pic.Panels {
		p := &pic.Panels[i]
		p.Title = termsafe.String(p.Title)
		p.Ticks = slices.Clone(p.Ticks)
		for j := range p.Ticks {
			p.Ticks[j].Label = termsafe.String(p.Ticks[j].Label)
		}
	}
	return pic
}
