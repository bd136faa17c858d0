package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progressLine shows how long work advances on standard error: on a
// terminal one line, redrawn at most ten times a second and erased when
// the work ends; otherwise (a log, a pipe) a line of its own every
// slowLineEvery, so that work that takes minutes says so while work that
// takes seconds writes nothing. Each line ends with the time since the
// work started. fit's search (searchProgress) and a run's modes, where
// standard error is not a terminal (modeProgress), show theirs with it.
type progressLine struct {
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

// slowLineEvery is how often work whose standard error is not a terminal
// writes its progress line.
const slowLineEvery = 30 * time.Second

// newProgressLine returns the progress line of work starting now.
func newProgressLine(w io.Writer, tty bool) *progressLine {
	p := &progressLine{w: w, tty: tty, now: time.Now}
	p.restart()
	return p
}

// restart starts the clock again: new work starts now.
func (p *progressLine) restart() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.start = p.now()
	p.last = p.start
}

// show shows text, and the time since the work started, if it is time to.
func (p *progressLine) show(text string) {
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
	line := fmt.Sprintf("%s (%s)", text, now.Sub(p.start).Round(time.Second))
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.drawn = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// clear erases the terminal's line, if one is drawn.
func (p *progressLine) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}
