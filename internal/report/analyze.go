package report

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"

	"golang.org/x/perf/benchmath"

	"gpuz/internal/bench"
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
	// interval, meanCI) and median (with benchmath's, medianCI) describe
	// them when n > 0.
	n      int
	stats  Stats
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
			ref = meanCI(seconds(m.Timed())).Center
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
			f.stats = Summarize(durations(timed))
			f.mean, f.median = meanCI(seconds(timed)), medianCI(seconds(timed))
			if !f.sim && f.mean.Center > 0 {
				f.speedup = ref / f.mean.Center
			}
			if f.realGPU() {
				f.eff, f.flag = efficiency(f.median.Center, f.pred), flagNote(f.median.Center, f.pred)
			}
		}
		if warm := m.Epochs[:min(m.Warmup, len(m.Epochs))]; len(warm) > 0 {
			f.cold = Summarize(durations(warm)).Mean.Seconds()
		}
		if f.n > 0 && m.Mode.Copies() {
			f.copies = true
			var copySeconds float64
			for _, e := range timed {
				f.up, f.down, copySeconds = f.up+e.UploadBytes, f.down+e.DownloadBytes, copySeconds+e.CopyTime.Seconds()
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
func analyzeTable(r bench.Result, wide bool) table {
	fs := figuresOf(r)
	var t table
	var notes notes
	predicted, realGPU, onlySim := false, false, true
	for _, f := range fs {
		predicted = predicted || f.pred != nil
		realGPU = realGPU || f.realGPU()
		if !f.m.Mode.OnHost() && f.m.Device != "" && !f.sim {
			onlySim = false
		}
	}
	scaled := lossScaled(r.Header)
	showCold := wide || (!predicted && !scaled)
	showSpeedup := wide || !predicted || !onlySim

	// col adds a column of cells, one per mode.
	cells := make([][]string, len(fs))
	col := func(name string, left bool, cell func(f figures) string) {
		t.columns = append(t.columns, column{name, left})
		for i, f := range fs {
			cells[i] = append(cells[i], cell(f))
		}
	}
	// timeCol adds a column of times in seconds, in the unit chosen from
	// them; value reports whether the figure applies to a mode.
	timeCol := func(name string, value func(f figures) (float64, bool), cell func(u timeUnit, f figures, v float64) string) {
		var vs []float64
		for _, f := range fs {
			if v, ok := value(f); ok {
				vs = append(vs, v)
			}
		}
		u := timeUnitFor(vs)
		col(name+" ("+u.name+")", false, func(f figures) string {
			if v, ok := value(f); ok {
				return cell(u, f, v)
			}
			return na
		})
	}
	plain := func(u timeUnit, _ figures, v float64) string { return u.format(v) }
	timed := func(get func(f figures) float64) func(f figures) (float64, bool) {
		return func(f figures) (float64, bool) { return get(f), f.n > 0 }
	}

	col("mode", true, func(f figures) string { return string(f.m.Mode) })
	col("device", true, func(f figures) string {
		if f.m.Device == "" {
			return na
		}
		d := f.m.Device
		if !wide {
			d = notes.shortDevice(d)
		}
		if f.sim {
			d += "†"
		}
		if f.m.Placement != "" {
			d += " " + f.m.Placement
		}
		return d
	})
	if wide {
		col("epochs", false, func(f figures) string {
			if !f.ran {
				return na
			}
			return strconv.Itoa(f.n)
		})
	}
	timeCol("mean", timed(func(f figures) float64 { return f.mean.Center }), func(u timeUnit, f figures, v float64) string {
		return u.format(v) + " ± " + spread(u, f.mean)
	})
	if wide {
		timeCol("stddev", func(f figures) (float64, bool) { return f.stats.Stddev.Seconds(), f.n > 1 }, plain)
		timeCol("median", timed(func(f figures) float64 { return f.median.Center }), func(u timeUnit, f figures, v float64) string {
			return u.format(v) + " ± " + spread(u, f.median)
		})
		timeCol("min", timed(func(f figures) float64 { return f.stats.Min.Seconds() }), plain)
		timeCol("max", timed(func(f figures) float64 { return f.stats.Max.Seconds() }), plain)
	}
	if showCold {
		timeCol("cold", func(f figures) (float64, bool) { return f.cold, !math.IsNaN(f.cold) }, plain)
	}
	setup := false
	for _, f := range fs {
		setup = setup || len(f.m.Setup) > 0
	}
	if wide && setup {
		timeCol("setup", func(f figures) (float64, bool) { return bench.SetupTime(f.m.Setup).Seconds(), len(f.m.Setup) > 0 }, plain)
	}
	if predicted {
		timeCol("predicted", func(f figures) (float64, bool) {
			if f.pred == nil {
				return 0, false
			}
			return f.pred.Model.Seconds(), true
		}, func(u timeUnit, f figures, _ float64) string { return predictedCell(u, f.pred) })
		if wide {
			col("limiter", true, func(f figures) string {
				if f.pred == nil || f.pred.Limiter == "" {
					return na
				}
				return f.pred.Limiter
			})
		}
	}
	if realGPU {
		col("eff.", false, func(f figures) string {
			if math.IsNaN(f.eff) {
				return na
			}
			cell := fmt.Sprintf("%.0f%%", 100*f.eff)
			if f.flag != "" {
				cell += " " + notes.numbered(string(f.m.Mode), f.flag)
			}
			return cell
		})
	}
	if showSpeedup {
		col("speed-up", false, func(f figures) string {
			if math.IsNaN(f.speedup) {
				return na
			}
			return fmt.Sprintf("%.2f×", f.speedup)
		})
	}
	col("peak mem", false, func(f figures) string {
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
	if wide {
		col("H→D/epoch", false, copied(func(f figures) int64 { return f.up }))
		col("D→H/epoch", false, copied(func(f figures) int64 { return f.down }))
		col("copy rate", false, func(f figures) string {
			if !f.copies || math.IsNaN(f.rate) {
				return na
			}
			return byteRate(f.rate)
		})
	} else {
		col("copied", false, copied(func(f figures) int64 { return f.up + f.down }))
	}
	remote := false
	for _, f := range fs {
		remote = remote || f.remote > 0
	}
	if remote {
		col("remote", false, copied(func(f figures) int64 { return f.remote }))
	}
	if scaled {
		col("skipped", false, func(f figures) string { return skippedCell(f) })
	}
	col("status", true, func(f figures) string {
		if wide {
			return f.m.Status.String()
		}
		return notes.status(f.m.Mode, f.m.Status)
	})
	t.rows = cells

	first := "mean ± the half-width of its 95% confidence interval (Student's t)"
	if showCold {
		first += "; cold: mean of the warm-up epochs"
	}
	t.notes = append(t.notes, first)
	for _, w := range meanWarnings(fs) {
		t.notes = append(t.notes, "± ∞: "+w+" (timed epochs; raise --epochs)")
	}
	if wide {
		t.notes = append(t.notes, setupNotes(fs)...)
		t.notes = append(t.notes, "median ± the wider half of its 95% confidence interval, as benchstat computes it (golang.org/x/perf/benchmath)")
		for _, w := range medianWarnings(fs) {
			t.notes = append(t.notes, "median ± ∞: "+w+" (timed epochs; raise --epochs)")
		}
	}
	t.notes = append(t.notes, "sizes in binary units (1 KiB = 1024 B, MiB, GiB), rates in KiB/s, MiB/s, GiB/s")
	if wide {
		t.notes = append(t.notes, "H→D, D→H: bytes copied each way per timed epoch; copy rate: their sum over the copies' time")
	} else {
		t.notes = append(t.notes, "copied: bytes copied host→device plus device→host per timed epoch")
	}
	if remote {
		t.notes = append(t.notes, "remote: bytes the kernels read and wrote in place across the bus per timed epoch (managed, --managed-advise host)")
	}
	for _, f := range fs {
		if f.sim {
			t.notes = append(t.notes, "† simulated GPU: times are host times, not GPU times; no speed-up is shown for them")
			break
		}
	}
	modes, preds := make([]string, len(fs)), make([]*bench.Prediction, len(fs))
	for i, f := range fs {
		modes[i], preds[i] = string(f.m.Mode), f.pred
	}
	if note := predictionNote(modes, preds); note != "" {
		t.notes = append(t.notes, note)
	}
	if realGPU {
		t.notes = append(t.notes, "eff.: the bound over the measured median (100% would be the hardware's peak)")
	}
	switch {
	case !showCold && !showSpeedup:
		t.notes = append(t.notes, "--wide also shows the cold (warm-up) epochs and the speed-up")
	case !showCold:
		t.notes = append(t.notes, "--wide also shows the cold (warm-up) epochs")
	}
	t.notes = append(t.notes, notes.lines...)
	if recomputes(r.Header) {
		t.notes = append(t.notes, "recompute "+r.Header.Recompute+": each block's forward ran again before its gradients, only block inputs kept")
	}
	t.notes = append(t.notes, precisionNotes(r.Header, fs)...)
	if r.PeakRSSBytes > 0 {
		t.notes = append(t.notes, "peak RSS of this process: "+units.Bytes(r.PeakRSSBytes))
	}
	if h := r.Header; h.StartToFirstEpoch > 0 {
		note := "process start to the first epoch: " + units.Seconds(h.StartToFirstEpoch)
		if wide && len(h.Setup) > 0 {
			note += " (the run's own setup: " + phasesText(h.Setup) + ")"
		}
		t.notes = append(t.notes, note)
	}
	return t
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
		u := timeUnitFor([]float64{p.Duration.Seconds()})
		parts[i] = string(p.Name) + " " + u.format(p.Duration.Seconds()) + " " + u.name
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
