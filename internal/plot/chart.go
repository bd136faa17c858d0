package plot

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gpuz/internal/levers"
	"gpuz/internal/report"
	"gpuz/internal/results"
	"gpuz/internal/stats"
	"gpuz/internal/termsafe"
)

// Chart is what a plot shows, in the chart's units: times in Unit (s or
// ms), free device memory in GiB (in MiB where no row's reaches 1 GiB),
// windows in blocks. A run's chart has Bars; a sweep's has Lines and
// Bands.
type Chart struct {
	// Title names the workload, task, scale, device and gpuz revision.
	Title string
	// XLabel and YLabel name the axes with their units.
	XLabel, YLabel string
	// Unit is the unit of every time: "s" or "ms", chosen from the data.
	Unit string
	// Bars are a run's modes, in the run's order.
	Bars []Bar
	// Lines are a sweep's cuda and cache modes, one per combination of
	// mode and the settings of the parameters not on the x axis.
	Lines []Line
	// Bands are a sweep's cpu mode, which does not depend on device memory
	// or the window: one per combination of the other settings.
	Bands []Band
}

// Interval is a mean epoch time with its 95% confidence interval, as
// report's tables compute them (stats.MeanCI: Student's t). Lo and Hi are
// infinite where there is a single timed epoch; no error bar is drawn
// then.
type Interval struct {
	Mean, Lo, Hi float64
}

// HasCI says whether the interval is finite (drawn as an error bar).
func (iv Interval) HasCI() bool { return !math.IsInf(iv.Lo, 0) && !math.IsInf(iv.Hi, 0) }

// Bar is one mode of a run.
type Bar struct {
	// Label names the mode and its device, as "cuda (sim:1GiB)".
	Label string
	// Status is the mode's status: ok, OOM, skipped, interrupted …
	Status string
	// Interval is the mean of the timed epochs; zero when Missing.
	Interval
	// Missing says the mode has no timed epoch: it is drawn as a marker
	// at zero labelled with its Status.
	Missing bool
}

// Point is one setting of a sweep's line.
type Point struct {
	X float64
	Interval
}

// Failure is a setting at which a line's mode has no timed epoch (OOM,
// skipped …): drawn as a cross at the top of the axis.
type Failure struct {
	X      float64
	Status string
}

// Line is one mode (and setting of the other parameters) across a sweep,
// its points and failures in increasing X.
type Line struct {
	Label    string
	Points   []Point
	Failures []Failure
}

// Band is the cpu mode of a sweep: the mean and interval of its timed
// epochs in every row (with the same other settings), drawn shaded across
// the x axis.
type Band struct {
	Label string
	Interval
}

// gib is the bytes of a GiB.
const gib = 1 << 30

// Build turns a gpuz JSON document into the chart that draws it. A document
// with no timed epoch, or a sweep over neither take nor win_size, is an
// error.
func Build(doc results.Doc) (Chart, error) {
	var c Chart
	var err error
	if doc.Kind == results.SweepKind {
		c, err = buildSweep(doc)
	} else {
		c, err = buildRun(doc)
	}
	if err != nil {
		return Chart{}, err
	}
	c.scaleTimes()
	noCI := false
	c.eachInterval(func(iv *Interval) { noCI = noCI || (iv.Mean != 0 && !iv.HasCI()) })
	if noCI {
		c.Title += "\n" + NoCINote
	}
	return c, nil
}

// NoCINote ends the title of a chart with a mean that has no error bar.
const NoCINote = "no error bar: fewer than 2 timed epochs (raise --epochs)"

// ci is the mean of seconds and its interval.
func ci(seconds []float64) Interval {
	s := stats.MeanCI(seconds)
	return Interval{Mean: s.Center, Lo: s.Lo, Hi: s.Hi}
}

// buildRun draws a run's modes as bars.
func buildRun(doc results.Doc) (Chart, error) {
	c := Chart{
		Title:  title(doc.Header, devices(doc.Modes)),
		XLabel: "mode (error bars: 95% confidence interval of the mean, Student's t)",
	}
	timed := false
	for _, m := range doc.Modes {
		b := Bar{Label: m.Mode, Status: string(m.Status.Kind)}
		if m.Device != "" {
			b.Label = fmt.Sprintf("%s (%s)", m.Mode, m.Device)
		}
		if t := timedSeconds(m); len(t) > 0 {
			b.Interval, timed = ci(t), true
		} else {
			b.Missing = true
		}
		c.Bars = append(c.Bars, b)
	}
	if !timed {
		return Chart{}, fmt.Errorf("no timed epochs in the run (%d modes)", len(doc.Modes))
	}
	return c, nil
}

// The parameters a sweep is drawn against, and their axes.
var sweepAxes = map[string]string{
	"take":     "free device memory (GiB)",
	"win_size": "cache window (blocks)",
}

// sweepXParam returns the parameter a sweep over params is drawn against: the
// first that is take (free device memory) or win_size (the window). A
// sweep over neither cannot be drawn: the error says so.
func sweepXParam(params []string) (string, error) {
	for _, p := range params {
		if _, ok := sweepAxes[p]; ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("a sweep over %s: gpuz plot draws sweeps over take or win_size", termsafe.String(strings.Join(params, ", ")))
}

// CheckSweep says whether a sweep over params (snake_case, as its JSON
// names them) can be drawn, before it runs: nil when one of them is take
// or win_size.
func CheckSweep(params []string) error {
	_, err := sweepXParam(params)
	return err
}

// buildSweep draws a sweep: x is the first of its parameters that is take
// (free device memory) or win_size (the window); one line per mode other
// than cpu and settings of the other parameters, cpu as a band per
// settings of the other parameters.
func buildSweep(doc results.Doc) (Chart, error) {
	xParam, err := sweepXParam(doc.Parameters)
	if err != nil {
		return Chart{}, err
	}
	if len(doc.Rows) == 0 {
		return Chart{}, fmt.Errorf("a sweep with no rows")
	}
	var modes []results.Mode
	for _, r := range doc.Rows {
		modes = append(modes, r.Result.Modes...)
	}
	// A swept lever varies from line to line, which the labels name: the
	// header, the first row's, does not speak for the others.
	h := doc.Header
	if slices.Contains(doc.Parameters, "recompute") {
		h.Recompute = ""
	}
	if slices.Contains(doc.Parameters, "precision") {
		h.Precision = ""
	}
	if slices.Contains(doc.Parameters, "lora") {
		h.LoRARank = 0
	}
	c := Chart{
		Title:  title(h, devices(modes)),
		XLabel: sweepAxes[xParam],
	}
	// Free memory is drawn in GiB where a row's reaches 1 GiB, else in
	// MiB: a 256 MiB device's axis read 0.05, 0.15… GiB.
	perUnit := 1.0
	if xParam == "take" {
		var top int64
		for _, r := range doc.Rows {
			top = max(top, freeBytes(r))
		}
		perUnit = gib
		if top < gib {
			perUnit, c.XLabel = 1<<20, "free device memory (MiB)"
		}
	}
	lines := map[string]*Line{}
	var lineOrder []string
	cpu := map[string][]float64{}
	var cpuOrder []string
	for i, r := range doc.Rows {
		x, err := sweepX(xParam, r, perUnit)
		if err != nil {
			return Chart{}, fmt.Errorf("sweep row %d: %w", i, err)
		}
		others := otherSettings(doc.Parameters, xParam, r.Settings)
		for _, m := range r.Result.Modes {
			t := timedSeconds(m)
			label := strings.TrimSpace(m.Mode + " " + others)
			if report.OnHost(m.Mode) {
				// A row without timed cpu epochs adds nothing, and must
				// not enter the label: a later row's epochs would then
				// find it seen and make no band.
				if len(t) > 0 {
					if _, ok := cpu[label]; !ok {
						cpuOrder = append(cpuOrder, label)
					}
					cpu[label] = append(cpu[label], t...)
				}
				continue
			}
			l, ok := lines[label]
			if !ok {
				l = &Line{Label: label}
				lines[label] = l
				lineOrder = append(lineOrder, label)
			}
			if len(t) > 0 {
				l.Points = append(l.Points, Point{X: x, Interval: ci(t)})
			} else {
				l.Failures = append(l.Failures, Failure{X: x, Status: string(m.Status.Kind)})
			}
		}
	}
	timed := len(cpuOrder) > 0
	for _, label := range lineOrder {
		l := lines[label]
		slices.SortStableFunc(l.Points, func(a, b Point) int { return cmpFloat(a.X, b.X) })
		slices.SortStableFunc(l.Failures, func(a, b Failure) int { return cmpFloat(a.X, b.X) })
		timed = timed || len(l.Points) > 0
		c.Lines = append(c.Lines, *l)
	}
	for _, label := range cpuOrder {
		c.Bands = append(c.Bands, Band{Label: label, Interval: ci(cpu[label])})
	}
	if !timed {
		return Chart{}, fmt.Errorf("no timed epochs in the sweep's %d rows", len(doc.Rows))
	}
	return c, nil
}

// cmpFloat orders two numbers.
func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// freeBytes is the device's free memory of a sweep's row, 0 where the
// document says none (null: the run had no GPU device).
func freeBytes(r results.Row) int64 {
	if r.DeviceFreeBytes == nil {
		return 0
	}
	return *r.DeviceFreeBytes
}

// sweepX is a row's position on the x axis: the device's free memory in
// units of perUnit bytes for take, the window in blocks for win_size.
func sweepX(param string, r results.Row, perUnit float64) (float64, error) {
	if param == "take" {
		return float64(freeBytes(r)) / perUnit, nil
	}
	s, ok := r.Settings[param]
	if !ok {
		return 0, fmt.Errorf("no setting of %s", termsafe.String(param))
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("%s=%q is not a number", termsafe.String(param), s)
	}
	return x, nil
}

// otherSettings names the settings of the parameters other than xParam,
// in the sweep's order, as "win_size=3 batch=30".
func otherSettings(params []string, xParam string, settings map[string]string) string {
	var parts []string
	for _, p := range params {
		if p != xParam {
			parts = append(parts, p+"="+settings[p])
		}
	}
	return strings.Join(parts, " ")
}

// devices returns the devices of modes other than the host's, in order,
// each once.
func devices(modes []results.Mode) []string {
	var ds []string
	for _, m := range modes {
		if m.Device != "" && m.Device != "host" && !slices.Contains(ds, m.Device) {
			ds = append(ds, m.Device)
		}
	}
	return ds
}

// title names the workload, task, scale, the levers (recompute, the
// precision when 16-bit), device and gpuz's revision.
func title(h results.Header, devs []string) string {
	dev := strings.Join(devs, ", ")
	switch {
	case dev == "" && h.GPU != "":
		dev = h.GPU
	case dev == "":
		dev = "host"
	}
	rev := "revision unknown"
	if h.Env != nil && h.Env.Revision != "" && h.Env.Revision != "unknown" {
		rev = h.Env.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if h.Env.Modified == "true" {
			rev += "-dirty"
		}
	}
	what := strings.TrimSpace(h.Model + " " + h.Task)
	if what == "" {
		what = "gpuz run"
	}
	if h.Scale != "" {
		what += ", " + h.Scale + " scale"
	}
	if h.Task == "train" && levers.Recompute(h.Recompute).On() {
		what += ", recompute " + h.Recompute
	}
	if p := levers.Precision(h.Precision); p.Half() {
		what += ", " + p.String()
	}
	if h.LoRARank > 0 {
		what += fmt.Sprintf(", LoRA R=%d", h.LoRARank)
	}
	return fmt.Sprintf("%s, on %s\ngpuz %s", what, dev, rev)
}

// scaleTimes chooses the unit of the times from the largest mean (ms
// below a second) and converts every time to it.
func (c *Chart) scaleTimes() {
	largest := 0.0
	c.eachInterval(func(iv *Interval) { largest = max(largest, iv.Mean) })
	c.Unit, c.YLabel = "s", "epoch time, mean (s)"
	if largest >= 1 {
		return
	}
	c.Unit, c.YLabel = "ms", "epoch time, mean (ms)"
	c.eachInterval(func(iv *Interval) { iv.Mean, iv.Lo, iv.Hi = iv.Mean*1e3, iv.Lo*1e3, iv.Hi*1e3 })
}

// eachInterval calls f with every interval of the chart.
func (c *Chart) eachInterval(f func(*Interval)) {
	for i := range c.Bars {
		f(&c.Bars[i].Interval)
	}
	for i := range c.Lines {
		for j := range c.Lines[i].Points {
			f(&c.Lines[i].Points[j].Interval)
		}
	}
	for i := range c.Bands {
		f(&c.Bands[i].Interval)
	}
}
