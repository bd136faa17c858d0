package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"gpuz/internal/fit"
)

// searchProgress shows how a long fit search advances (fit.Progress) on
// standard error: on a terminal one line, redrawn at most ten times a
// second and erased when the search ends; otherwise (a log, a pipe) a
// line of its own every slowLineEvery, so that a search that takes
// minutes says so while one that takes seconds writes nothing.
type searchProgress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	start time.Time
	// last is when a line was last drawn (tty) or written; drawn says a
	// terminal line is on the screen.
	last  time.Time
	drawn bool
	now   func() time.Time
}

// slowLineEvery is how often a search whose standard error is not a
// terminal writes its progress line.
const slowLineEvery = 30 * time.Second

// newSearchProgress returns the progress of a search starting now.
func newSearchProgress(w io.Writer, tty bool) *searchProgress {
	p := &searchProgress{w: w, tty: tty, now: time.Now}
	p.start = p.now()
	p.last = p.start
	return p
}

// update shows pr if it is time to.
func (p *searchProgress) update(pr fit.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	every := slowLineEvery
	if p.tty {
		every = 100 * time.Millisecond
	}
	if now.Sub(p.last) < every {
		return
	}
	p.last = now
	line := "gpuz fit: " + pr.Phase
	if pr.Total > 0 {
		line += fmt.Sprintf(", %d of %d", pr.Done, pr.Total)
	}
	line += fmt.Sprintf(" (%s)", now.Sub(p.start).Round(time.Second))
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.drawn = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// clear erases the terminal's line, if one is drawn.
func (p *searchProgress) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}
