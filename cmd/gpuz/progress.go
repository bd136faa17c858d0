package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"gpuz/internal/bench"
)

// modeProgress shows how the mode that is running advances. On a
// terminal it draws one live line: its epoch and batch counters, a bar,
// the elapsed time and an estimate of what remains, redrawn at every
// batch done; it erases its line before any other line is written (the
// epoch lines keep their place and form) and when the mode ends. On a
// standard error that is not a terminal (a log, a pipe) it writes the
// counters as a line of their own at a batch done slowLineEvery after the
// last (progressLine), "cuda: epoch 1/3, batch 2/4 (1m4s)", so that a
// run whose batches take minutes says so, while a quick run's log is
// unchanged. A nil *modeProgress shows nothing.
type modeProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
	// log is the line of a standard error that is not a terminal, nil on
	// a terminal.
	log *progressLine
}

// newModeProgress returns the progress on w: a bar on a terminal, a line
// every slowLineEvery otherwise.
func newModeProgress(w io.Writer, tty bool) *modeProgress {
	if !tty {
		return &modeProgress{w: w, log: newProgressLine(w, false)}
	}
	return &modeProgress{w: w}
}

// start begins a mode's line, of epochs × batches batches in all.
func (p *modeProgress) start(mode bench.Mode, epochs, batches int) {
	if p == nil {
		return
	}
	if p.log != nil {
		p.log.restart()
		return
	}
	p.clear()
	p.bar = progressbar.NewOptions(epochs*batches,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(fmt.Sprintf("%s: epoch 0/%d", mode, epochs)),
		progressbar.OptionSetWidth(20),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
	)
	_ = p.bar.RenderBlank()
}

// batch redraws the line after a batch done (writes it, when it is time
// to, on a log).
func (p *modeProgress) batch(mode bench.Mode, b bench.BatchDone) {
	if p != nil && p.log != nil {
		p.log.show(fmt.Sprintf("%s: epoch %d/%d, batch %d/%d", mode, b.Epoch+1, b.Epochs, b.Batch+1, b.Batches))
		return
	}
	if p == nil || p.bar == nil {
		return
	}
	// Set draws the new count and Describe the new counters (the library
	// has no way to change both in one drawing); after the last batch Set
	// ends the bar, which erases the line, and Describe draws nothing.
	_ = p.bar.Set(b.Epoch*b.Batches + b.Batch + 1)
	p.bar.Describe(fmt.Sprintf("%s: epoch %d/%d, batch %d/%d", mode, b.Epoch+1, b.Epochs, b.Batch+1, b.Batches))
}

// around erases the line, runs write (which writes a line of the report)
// and draws the line again unless the mode has ended.
func (p *modeProgress) around(write func()) {
	if p == nil || p.bar == nil {
		write()
		return
	}
	_ = p.bar.Clear()
	write()
	if !p.bar.IsFinished() {
		_ = p.bar.RenderBlank()
	}
}

// clear erases the line for good: the mode has ended.
func (p *modeProgress) clear() {
	if p == nil || p.bar == nil {
		return
	}
	if !p.bar.IsFinished() {
		_ = p.bar.Clear()
	}
	p.bar = nil
}

// setupNotes says, on a standard error that is not a terminal (a log, a
// pipe: where no progress line is drawn), what a run's setup is doing
// when a phase lasts: a phase still going after the delay gets one line,
// "cuda: setup: drawing the initial parameters and uploading them…", so
// that a full-scale run (seconds to a minute of allocating, faulting in
// and initialising before its first epoch line) is not silent. Phases
// shorter than the delay print nothing, so a quick run's log is as it
// was. A nil *setupNotes notes nothing (on a terminal).
type setupNotes struct {
	w     io.Writer
	after time.Duration // 0: at once, as the phase starts
	// mu serialises the notes, written from a timer's goroutine, with the
	// run's own lines (guard runs each event's handler under it), and gen
	// tells a note whose phase has ended since its timer fired.
	mu    sync.Mutex
	gen   int
	timer *time.Timer
}

// defaultSetupNoteDelay is how long a setup phase runs before its line.
const defaultSetupNoteDelay = time.Second

// newSetupNotes returns the notes on w after a phase has lasted after (0:
// defaultSetupNoteDelay, less than 0: at once), or nil when w is a
// terminal.
func newSetupNotes(w io.Writer, tty bool, after time.Duration) *setupNotes {
	if tty {
		return nil
	}
	switch {
	case after == 0:
		after = defaultSetupNoteDelay
	case after < 0:
		after = 0
	}
	return &setupNotes{w: w, after: after}
}

// guard returns handle, run under the notes' lock and told each event
// first: an event ends the phase noted before it, and a setup phase's
// event starts its note's delay.
func (n *setupNotes) guard(handle func(bench.Event)) func(bench.Event) {
	if n == nil {
		return handle
	}
	return func(e bench.Event) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.cancel()
		if e.Phase != "" {
			line := setupNote(e.Mode, e.Device, e.Phase)
			if n.after == 0 {
				fmt.Fprintln(n.w, line)
			} else {
				gen := n.gen
				n.timer = time.AfterFunc(n.after, func() {
					n.mu.Lock()
					defer n.mu.Unlock()
					if gen == n.gen {
						fmt.Fprintln(n.w, line)
					}
				})
			}
		}
		handle(e)
	}
}

// stop ends the notes: the run is over.
func (n *setupNotes) stop() {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cancel()
}

// cancel drops the note waiting for its delay, if any, and makes a timer
// that fires anyway print nothing; the caller holds n.mu.
func (n *setupNotes) cancel() {
	n.gen++
	if n.timer != nil {
		n.timer.Stop()
		n.timer = nil
	}
}

// setupNote is the line for a setup phase of mode on device (mode "": the
// run's own).
func setupNote(mode bench.Mode, device string, phase bench.PhaseName) string {
	var what string
	switch phase {
	case bench.PhaseBuild: // the run's own: every mode loads its schedule
		what = "building the model and compiling its schedule"
	case bench.PhaseData:
		what = "generating the data set from the seed"
	case bench.PhaseMeasure:
		what = "measuring " + device + " for the predictions"
	case bench.PhaseReserve:
		what = "reserving its memory on " + device
	case bench.PhaseLoad:
		what = "allocating its buffers on " + device + " and faulting the memory in"
	case bench.PhaseInit:
		what = "drawing the initial parameters and uploading them"
	case bench.PhasePredict:
		what = "predicting an epoch on its profile"
	default:
		what = string(phase)
	}
	if mode == "" {
		return "setup: " + what + "…"
	}
	return string(mode) + ": setup: " + what + "…"
}
