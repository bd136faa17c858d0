package main

import (
	"fmt"
	"io"

	"github.com/schollz/progressbar/v3"

	"gpuz/internal/bench"
)

// modeProgress draws, on a terminal, one live line for the mode that is
// running: its epoch and batch counters, a bar, the elapsed time and an
// estimate of what remains, redrawn at every batch done. It erases its line
// before any other line is written (the epoch lines keep their place and
// form) and when the mode ends. A nil *modeProgress draws nothing, which is
// what a run whose standard error is not a terminal gets, so that logs are
// unchanged.
type modeProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

// newModeProgress returns the progress line on w, or nil when w is not a
// terminal.
func newModeProgress(w io.Writer, tty bool) *modeProgress {
	if !tty {
		return nil
	}
	return &modeProgress{w: w}
}

// start begins a mode's line, of epochs × batches batches in all.
func (p *modeProgress) start(mode bench.Mode, epochs, batches int) {
	if p == nil {
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

// batch redraws the line after a batch done.
func (p *modeProgress) batch(mode bench.Mode, b bench.BatchDone) {
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
