package main

import (
	"fmt"
	"io"

	"gpuz/internal/fit"
)

// searchProgress shows how a long fit search advances (fit.Progress) on
// standard error, as a progressLine: on a terminal one line, redrawn and
// erased when the search ends; otherwise a line every slowLineEvery.
type searchProgress struct{ *progressLine }

// newSearchProgress returns the progress of a search starting now.
func newSearchProgress(w io.Writer, tty bool) *searchProgress {
	return &searchProgress{newProgressLine(w, tty)}
}

// update shows pr if it is time to.
func (p *searchProgress) update(pr fit.Progress) {
	text := "gpuz fit: " + pr.Phase
	if pr.Total > 0 {
		text += fmt.Sprintf(", %d of %d", pr.Done, pr.Total)
	}
	p.show(text)
}
