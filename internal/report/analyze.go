package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchmath"

	"gpuz/internal/bench"
	"gpuz/internal/results"
	"gpuz/internal/stats"
	"gpuz/internal/units"
)

// figures are what the Analyze table shows of one mode, in base units
// (seconds, bytes), before any formatting: the text and Markdown tables and
// the CSV rows are all made from them.
type figures struct {
	m   bench.ModeResult
	sim bool // on the simulated GPU: its times are host times
	// ran is whether the mode ran any epoch; when not, no figure applies.
	ran bool
	// n is the number of timed epochs; stats, mean (with its Student-t
	// interval, stats.MeanCI) and median (with benchmath's, stats.MedianCI) describe
	// them when n > 0.
	n      int
	stats  stats.Summary
	mean   benchmath.Summary
	median benchmath.Summary
	// cold is the mean warm-up epoch in seconds, NaN when there was none.
	cold float64
	// speedup is the cpu row's mean over this mode's: above 1 is faster
	// than the cpu. NaN where it does not apply: no cpu row to compare
	// with, no timed epoch, or times from the simulated GPU.
	speedup float64
	// copies is whether the copy figures apply: a mode that copies between
	// host and device, with timed epochs. up and down are then the mean
	// bytes a timed epoch copied each way, rate their sum over the copies'
	// time in bytes per second (NaN when the copies took no time).
	copies   bool
	up, down int64
	rate     float64
	// remote is the mean bytes a timed epoch accessed in place across the
	// bus (the managed mode with the host advised).
	remote int64
	// pred is the mode's prediction per epoch, nil without one; eff its
	// bound over the measured median and flag the note on a median far
	// above its model time ("" when not flagged), both only for a real
	// GPU's rows (NaN and "" otherwise).
	pred *bench.Prediction
	eff  float64
	flag string
}

// figuresOf computes the figures of every mode of r, in order. The speed-up
// compares with the first cpu mode that ended ok with timed epochs.
func figuresOf(r bench.Result) []figures {
	ref := math.NaN()
	for _, m := range r.Modes {
		if m.Mode.OnHost() && m.Status.Kind == bench.StatusOK && len(m.Timed()) > 0 {
			ref = stats.MeanCI(results.Seconds(m.Timed())).Center
			break
		}
	}
	fs := make([]figures, len(r.Modes))
	for i, m := range r.Modes {
		f := figures{m: m, sim: m.Simulated, ran: len(m.Epochs) > 0, cold: math.NaN(), speedup: math.NaN(), rate: math.NaN(),
			pred: m.Prediction, eff: math.NaN()}
		timed := m.Timed()
		f.n = len(timed)
		if f.n > 0 {
			f.stats = stats.Summarize(results.Durations(timed))
			f.mean, f.median = stats.MeanCI(results.Seconds(timed)), stats.MedianCI(results.Seconds(timed))
			if !f.sim && f.mean.Center > 0 {
				f.speedup = ref / f.mean.Center
			}
			if f.realGPU() {
				f.eff, f.flag = efficiency(f.median.Center, f.pred), flagNote(f.median.Center, f.pred)
			}
		}
		if warm := m.Epochs[:min(m.Warmup, len(m.Epochs))]; len(warm) > 0 {
			f.cold = stats.Summarize(results.Durations(warm)).Mean.Seconds()
		}
		if f.n > 0 && m.Mode.Copies() {
			f.copies = true
			var copySeconds float64
			for _, e := range timed {
				up, down, took := e.Copied()
				f.up, f.down, copySeconds = f.up+up, f.down+down, copySeconds+took.Seconds()
			}
			if copySeconds > 0 {
				f.rate = float64(f.up+f.down) / copySeconds
			}
			f.up, f.down = f.up/int64(f.n), f.down/int64(f.n)
			for _, e := range timed {
				f.remote += e.RemoteBytes
			}
			f.remote /= int64(f.n)
		}
		fs[i] = f
	}
	return fs
}

// realGPU reports whether f is a GPU mode's row measured on a real GPU
// with a prediction: the rows whose measured time is compared with the
// model's (an efficiency and a flag).
func (f figures) realGPU() bool { return f.pred != nil && !f.sim && !f.m.Mode.OnHost() }

// na is the cell of a figure that does not apply.
const na = "-"

// analyzeTable builds the Analyze table of r. By default it has the
// columns a reader compares modes by and fits maxWidth columns: mode,
// device (for cache with its policy and window), median ± its confidence
// interval, cold epoch, speed-up, peak device memory, bytes copied per
// epoch and status, a status's reason going to a numbered note. wide adds
// the timed epochs, mean, standard deviation, minimum, maximum, the copies
// each way and their rate, and shows full device names and statuses.
//
// Each column of times is in one unit, named in its heading; sizes and
// rates are in binary units, as a note says. Times from the simulated GPU
// are marked † and get no speed-up.
//
// Modes with a prediction (bench.Prediction) get a "predicted" column:
// the model time per epoch with its roofline bound, "1.21 (≥0.64)", and a
// note naming the profiles. A real GPU's predicted rows also get "eff.",
// the bound over the measured median, with a numbered note when the
// median is flagged as far above the model time (perfmodel.Flag).
//
// A 16-bit run gets a note naming its precision; fp16 training also a
// "skipped" column, the steps each mode skipped as their scaled gradients
// overflowed, with a note giving each mode's final loss scale.
//
// To keep the default table within 100 columns with a predicted or a
// skipped column, the cold column moves to --wide, and so does the
// speed-up when a predicted table's GPU rows are all simulated (it would
// show only the cpu row's 1.00×).
//
// The table is built in steps, left to right: the columns that name a row
// (identityColumns), the columns of times (timeColumns), those comparing
// the times (comparisonColumns), the memory and copies (memoryColumns) and
// the status (statusColumn); then the notes under it (tableNotes), after
// the numbered notes the cells made.
func analyzeTable(r bench.Result, wide bool) table {
	a := newAnalysis(r, wide)
	a.identityColumns()
	a.timeColumns()
	a.stepColumns()
	a.generationColumns()
	a.comparisonColumns()
	a.memoryColumns()
	a.statusColumn()
	a.t.rows = a.cells
	a.t.notes = slices.Concat(a.tableNotes(), a.generationNotes(), a.runNotes())
	return a.t
}

// analysis is an Analyze table being built: the run, its figures, which
// of the optional columns it shows, and the columns, cells and numbered
// notes added so far.
type analysis struct {
	r    bench.Result
	fs   []figures
	wide bool
	// predicted is whether any mode has a prediction, realGPU whether any
	// is a real GPU's predicted row (figures.realGPU), onlySim whether
	// every GPU row with a device ran on the simulated GPU, scaled whether
	// the run is fp16 training, remote whether any mode accessed memory in
	// place across the bus.
	predicted, realGPU, onlySim, scaled, remote bool
	// showCold and showSpeedup say whether the cold and speed-up columns
	// fit the table (see analyzeTable).
	showCold, showSpeedup bool
	t                     table
	cells                 [][]string // one row per mode
	notes                 notes
}

// newAnalysis computes r's figures and decides which optional columns its
// table shows.
func newAnalysis(r bench.Result, wide bool) *analysis {
	a := &analysis{r: r, fs: figuresOf(r), wide: wide, onlySim: true, scaled: lossScaled(r.Header)}
	for _, f := range a.fs {
		a.predicted = a.predicted || f.pred != nil
		a.realGPU = a.realGPU || f.realGPU()
		if !f.m.Mode.OnHost() && f.m.Device != "" && !f.sim {
			a.onlySim = false
		}
		a.remote = a.remote || f.remote > 0
	}
	a.showCold = wide || (!a.predicted && !a.scaled)
	a.showSpeedup = wide || !a.predicted || !a.onlySim
	a.cells = make([][]string, len(a.fs))
	return a
}

// col adds a column of cells, one per mode.
func (a *analysis) col(name string, left bool, cell func(f figures) string) {
	a.t.columns = append(a.t.columns, column{name, left})
	for i, f := range a.fs {
		a.cells[i] = append(a.cells[i], cell(f))
	}
}

// timeCol adds a column of times in seconds, in the unit chosen from
// them; value reports whether the figure applies to a mode.
func (a *analysis) timeCol(name string, value func(f figures) (float64, bool), cell func(u timeUnit, f figures, v float64) string) {
	var vs []float64
	for _, f := range a.fs {
		if v, ok := value(f); ok {
			vs = append(vs, v)
		}
	}
	u := timeUnitFor(vs)
	a.col(name+" ("+u.name+")", false, func(f figures) string {
		if v, ok := value(f); ok {
			return cell(u, f, v)
		}
		return na
	})
}

// plainTime is a time column's cell holding the time alone.
func plainTime(u timeUnit, _ figures, v float64) string { return u.format(v) }

// timedFigure is a time column's value for a figure of the timed epochs,
// which applies to a mode with any.
func timedFigure(get func(f figures) float64) func(f figures) (float64, bool) {
	return func(f figures) (float64, bool) { return get(f), f.n > 0 }
}

// identityColumns adds the columns that say which mode a row is: the
// mode, its device (shortened by default, its description in a note) with
// the placement, and under wide the count of timed epochs.
func (a *analysis) identityColumns() {
	a.col("mode", true, func(f figures) string { return string(f.m.Mode) })
	a.col("device", true, func(f figures) string {
		if f.m.Device == "" {
			return na
		}
		d := f.m.Device
		if !a.wide {
			d = a.notes.shortDevice(d)
		}
		if f.sim {
			d += "†"
		}
		if f.m.Placement != "" {
			d += " " + f.m.Placement
		}
		return d
	})
	if a.wide {
		a.col("epochs", false, func(f figures) string {
			if !f.ran {
				return na
			}
			return strconv.Itoa(f.n)
		})
	}
}

// timeColumns adds the columns of times: the mean with its interval; under
// wide the standard deviation, the median with its interval, the minimum
// and maximum; the cold epoch where it fits; under wide the setup; and the
// prediction (with its limiter under wide) when any mode has one.
func (a *analysis) timeColumns() {
	a.timeCol("mean", timedFigure(func(f figures) float64 { return f.mean.Center }), func(u timeUnit, f figures, v float64) string {
		return u.format(v) + " ± " + spread(u, f.mean)
	})
	if a.wide {
		a.timeCol("stddev", func(f figures) (float64, bool) { return f.stats.Stddev.Seconds(), f.n > 1 }, plainTime)
		a.timeCol("median", timedFigure(func(f figures) float64 { return f.median.Center }), func(u timeUnit, f figures, v float64) string {
			return u.format(v) + " ± " + spread(u, f.median)
		})
		a.timeCol("min", timedFigure(func(f figures) float64 { return f.stats.Min.Seconds() }), plainTime)
		a.timeCol("max", timedFigure(func(f figures) float64 { return f.stats.Max.Seconds() }), plainTime)
	}
	if a.showCold {
		a.timeCol("cold", func(f figures) (float64, bool) { return f.cold, !math.IsNaN(f.cold) }, plainTime)
	}
	setup := false
	for _, f := range a.fs {
		setup = setup || len(f.m.Setup) > 0
	}
	if a.wide && setup {
		a.timeCol("setup", func(f figures) (float64, bool) { return bench.SetupTime(f.m.Setup).Seconds(), len(f.m.Setup) > 0 }, plainTime)
	}
	if !a.predicted {
		return
	}
	a.timeCol("predicted", func(f figures) (float64, bool) {
		if f.pred == nil {
			return 0, false
		}
		return f.pred.Model.Seconds(), true
	}, func(u timeUnit, f figures, _ float64) string { return predictedCell(u, f.pred) })
	if a.wide {
		a.col("limiter", true, func(f figures) string {
			if f.pred == nil || f.pred.Limiter == "" {
				return na
			}
			return f.pred.Limiter
		})
	}
}

// stepColumns adds, for a workload of sequences trained or evaluated,
// the tokens a second of the mean epoch (samples × sequence length over
// its time) and under wide the mean time of a step (an epoch's time over
// its batches); nothing for the other workloads and for a generation,
// whose own columns count its tokens.
func (a *analysis) stepColumns() {
	h := a.r.Header
	if h.SeqLen <= 0 || bench.Task(h.Task) == bench.TaskGenerate || h.Batch <= 0 {
		return
	}
	a.col("tok/s", false, func(f figures) string {
		if f.n == 0 || f.mean.Center <= 0 {
			return na
		}
		return sig(float64(h.Samples)*float64(h.SeqLen)/f.mean.Center, 3)
	})
	if a.wide {
		steps := float64(max(h.Samples/h.Batch, 1))
		a.timeCol("step", timedFigure(func(f figures) float64 { return f.mean.Center / steps }), plainTime)
	}
}

// comparisonColumns adds the columns that compare a mode's times: a real
// GPU's efficiency against its prediction (a flagged median noted) and
// the speed-up over the cpu, where it fits.
func (a *analysis) comparisonColumns() {
	if a.realGPU {
		a.col("eff.", false, func(f figures) string {
			if math.IsNaN(f.eff) {
				return na
			}
			cell := fmt.Sprintf("%.0f%%", 100*f.eff)
			if f.flag != "" {
				cell += " " + a.notes.numbered(string(f.m.Mode), f.flag)
			}
			return cell
		})
	}
	if a.showSpeedup {
		a.col("speed-up", false, func(f figures) string {
			if math.IsNaN(f.speedup) {
				return na
			}
			return fmt.Sprintf("%.2f×", f.speedup)
		})
	}
}

// memoryColumns adds the peak device memory, the bytes copied per timed
// epoch (each way and their rate under wide, their sum by default), those
// accessed in place when any mode has some, and fp16 training's skipped
// steps.
func (a *analysis) memoryColumns() {
	a.col("peak mem", false, func(f figures) string {
		if !f.ran || f.m.PeakDeviceBytes <= 0 {
			return na
		}
		return units.Bytes(f.m.PeakDeviceBytes)
	})
	copied := func(get func(f figures) int64) func(f figures) string {
		return func(f figures) string {
			if !f.copies {
				return na
			}
			return units.Bytes(get(f))
		}
	}
	if a.wide {
		a.col("H→D/epoch", false, copied(func(f figures) int64 { return f.up }))
		a.col("D→H/epoch", false, copied(func(f figures) int64 { return f.down }))
		a.col("copy rate", false, func(f figures) string {
			if !f.copies || math.IsNaN(f.rate) {
				return na
			}
			return byteRate(f.rate)
		})
	} else {
		a.col("copied", false, copied(func(f figures) int64 { return f.up + f.down }))
	}
	if a.remote {
		a.col("remote", false, copied(func(f figures) int64 { return f.remote }))
	}
	if a.scaled {
		a.col("skipped", false, func(f figures) string { return skippedCell(f) })
	}
}

// statusColumn adds the status: in full under wide, else its kind with the
// reason in a numbered note.
func (a *analysis) statusColumn() {
	a.col("status", true, func(f figures) string {
		if a.wide {
			return f.m.Status.String()
		}
		return a.notes.status(f.m.Mode, f.m.Status)
	})
}

// tableNotes are the notes on the table's columns, in order: the
// intervals, the setup (wide), the units, the copies, the simulated GPU,
// the predictions, what --wide would add, then the numbered notes the
// cells made.
func (a *analysis) tableNotes() []string {
	first := "mean ± the half-width of its 95% confidence interval (Student's t)"
	if a.showCold {
		first += "; cold: mean of the warm-up epochs"
	}
	lines := []string{first}
	for _, w := range meanWarnings(a.fs) {
		lines = append(lines, "± ∞: "+w+" (timed epochs; raise --epochs)")
	}
	if a.wide {
		lines = append(lines, setupNotes(a.fs)...)
		lines = append(lines, "median ± the wider half of its 95% confidence interval, as benchstat computes it (golang.org/x/perf/benchmath)")
		for _, w := range medianWarnings(a.fs) {
			lines = append(lines, "median ± ∞: "+w+" (timed epochs; raise --epochs)")
		}
	}
	lines = append(lines, "sizes in binary units (1 KiB = 1024 B, MiB, GiB), rates in KiB/s, MiB/s, GiB/s")
	if a.wide {
		lines = append(lines, "H→D, D→H: bytes copied each way per timed epoch; copy rate: their sum over the copies' time")
	} else {
		lines = append(lines, "copied: bytes copied host→device plus device→host per timed epoch")
	}
	if a.remote {
		lines = append(lines, "remote: bytes the kernels read and wrote in place across the bus per timed epoch (managed, --managed-advise host)")
	}
	for _, f := range a.fs {
		if f.sim {
			lines = append(lines, "† simulated GPU: times are host times, not GPU times; no speed-up is shown for them")
			break
		}
	}
	modes, preds := make([]string, len(a.fs)), make([]*bench.Prediction, len(a.fs))
	for i, f := range a.fs {
		modes[i], preds[i] = string(f.m.Mode), f.pred
	}
	if note := predictionNote(modes, preds); note != "" {
		lines = append(lines, note)
	}
	if a.realGPU {
		lines = append(lines, "eff.: the bound over the measured median (100% would be the hardware's peak)")
	}
	switch {
	case !a.showCold && !a.showSpeedup:
		lines = append(lines, "--wide also shows the cold (warm-up) epochs and the speed-up")
	case !a.showCold:
		lines = append(lines, "--wide also shows the cold (warm-up) epochs")
	}
	return append(lines, a.notes.lines...)
}

// runNotes are the notes on the run as a whole: its recompute and
// precision, the process's peak RSS, and the time from the process's
// start to the first epoch (with the run's own setup under wide).
func (a *analysis) runNotes() []string {
	h := a.r.Header
	var lines []string
	if recomputes(h) {
		lines = append(lines, "recompute "+h.Recompute+": each block's forward ran again before its gradients, only block inputs kept")
	}
	lines = append(lines, precisionNotes(h, a.fs)...)
	if a.r.PeakRSSBytes > 0 {
		lines = append(lines, "peak RSS of this process: "+units.Bytes(a.r.PeakRSSBytes))
	}
	if h.StartToFirstEpoch > 0 {
		note := "process start to the first epoch: " + units.Seconds(results.Duration(h.StartToFirstEpoch))
		if a.wide && len(h.Setup) > 0 {
			note += " (the run's own setup: " + phasesText(h.Setup) + ")"
		}
		lines = append(lines, note)
	}
	return lines
}

// skippedCell is a mode's fp16 training steps skipped over every epoch,
// "-" for a mode that ran none.
func skippedCell(f figures) string {
	if !f.ran {
		return na
	}
	return strconv.Itoa(f.m.SkippedSteps())
}

// precisionNotes are the notes of a 16-bit run: what it stored in 16 bits,
// and for fp16 training what the skipped column counts and each mode's
// final loss scale. None for fp32.
func precisionNotes(h bench.Header, fs []figures) []string {
	p := precisionOf(h)
	if !p.Half() {
		return nil
	}
	lines := []string{precisionNote(p)}
	if !lossScaled(h) {
		return lines
	}
	var scales []string
	for _, f := range fs {
		if f.ran {
			scales = append(scales, string(f.m.Mode)+" "+strconv.FormatFloat(f.m.LossScale, 'g', -1, 64))
		}
	}
	note := "skipped: fp16 training steps skipped over every epoch, warm-up included, as their scaled gradients overflowed"
	if len(scales) > 0 {
		note += "; final loss scale: " + strings.Join(scales, ", ")
	}
	return append(lines, note)
}

// setupNotes are the notes of the wide table's setup column: what it
// counts, then each mode's phases in the order they ran.
func setupNotes(fs []figures) []string {
	var lines []string
	for _, f := range fs {
		if len(f.m.Setup) > 0 {
			lines = append(lines, string(f.m.Mode)+" setup: "+phasesText(f.m.Setup))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return append([]string{"setup: a mode's phases before its first epoch, in the order they ran (docs/output.md)"}, lines...)
}

// phasesText lists setup phases with their times, each in its own unit:
// "open 410 µs, build 12.2 ms, load 371 ms, init 1.82 s".
func phasesText(phases []bench.Phase) string {
	parts := make([]string, len(phases))
	for i, p := range phases {
		u := timeUnitFor([]float64{p.Seconds})
		parts[i] = p.Name + " " + u.format(p.Seconds) + " " + u.name
	}
	return strings.Join(parts, ", ")
}

// spread formats half the widest side of a median's confidence interval
// in u, to the median's decimal places, or with one significant digit
// where those would round it to 0; "∞" when the sample is too small for
// an interval.
func spread(u timeUnit, s benchmath.Summary) string {
	if math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) {
		return "∞"
	}
	half := max(s.Hi-s.Center, s.Center-s.Lo) / u.seconds
	if half == 0 {
		return "0"
	}
	center := u.format(s.Center)
	decimals := 0
	if i := strings.IndexByte(center, '.'); i >= 0 {
		decimals = len(center) - i - 1
	}
	if text := strconv.FormatFloat(half, 'f', decimals, 64); strings.Trim(text, "0.") != "" {
		return text
	}
	return sig(half, 1)
}

// meanWarnings returns the warnings about the means' intervals (one timed
// epoch gives none), each once.
func meanWarnings(fs []figures) []string {
	return warningsOf(fs, func(f figures) benchmath.Summary { return f.mean })
}

// medianWarnings returns benchmath's warnings about the medians' intervals
// (too few epochs for one), each once.
func medianWarnings(fs []figures) []string {
	return warningsOf(fs, func(f figures) benchmath.Summary { return f.median })
}

// warningsOf returns the warnings of the summaries summary picks from fs,
// each once.
func warningsOf(fs []figures, summary func(figures) benchmath.Summary) []string {
	var ws []string
	for _, f := range fs {
		for _, w := range summary(f).Warnings {
			if s := w.Error(); !containsString(ws, s) {
				ws = append(ws, s)
			}
		}
	}
	return ws
}

func containsString(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// byteRate formats bytes per second in binary units: "2.00 GiB/s".
func byteRate(bytesPerSecond float64) string {
	return units.Bytes(int64(math.Round(bytesPerSecond))) + "/s"
}

// notes gathers the notes a default table refers to: what a shortened
// device name stands for and the reasons of statuses, numbered [1], [2] …
type notes struct {
	lines   []string
	devices []string
	n       int
}

// shortDevice returns a device's name without the description in
// parentheses ("cuda:0" for "cuda:0 (NVIDIA GeForce RTX 4060 Laptop GPU)"),
// noting once what it stands for.
func (ns *notes) shortDevice(name string) string {
	short, _, found := strings.Cut(name, " (")
	if found && !containsString(ns.devices, name) {
		ns.devices = append(ns.devices, name)
		ns.lines = append(ns.lines, short+": "+strings.TrimSuffix(strings.TrimPrefix(name, short+" ("), ")"))
	}
	return short
}

// status returns a status's cell: its kind alone, with the reason in a
// numbered note ("OOM [1]" and "[1] cuda: OOM: needs …"), so that a long
// reason does not widen the table.
func (ns *notes) status(mode bench.Mode, s bench.Status) string {
	return ns.statusOf(string(mode), s)
}

// statusOf is status for a row named by label in its note ("take=8 cuda").
func (ns *notes) statusOf(label string, s bench.Status) string {
	if s.Reason == "" {
		return string(s.Kind)
	}
	return cmp.Or(string(s.Kind), "?") + " " + ns.numbered(label, s.String())
}

// numbered adds the note "[n] label: text" under the next number and
// returns its mark, "[n]".
func (ns *notes) numbered(label, text string) string {
	ns.n++
	ns.lines = append(ns.lines, fmt.Sprintf("[%d] %s: %s", ns.n, label, text))
	return fmt.Sprintf("[%d]", ns.n)
}
