package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"gpuz/internal/perfmodel"
)

// Calibration is what gpuz calibrate did: the device's profile before and
// after fitting, the kernel and copy samples it fitted to, and the
// held-out runs (small workload runs, not fitted) it checks the fit on.
type Calibration struct {
	Before, After perfmodel.Profile
	// Kept names the factors no sample decided (perfmodel.FitResult).
	Kept    []string
	Samples []perfmodel.Sample
	HeldOut []perfmodel.Sample
}

// WriteCalibration writes the fitted factors beside the ones before, the
// model's median error on the fitted samples, and a row per held-out run
// with its measured time and the model time before and after, then the
// held-out runs' median error before and after.
func WriteCalibration(w io.Writer, c Calibration) error {
	eb, ea := c.Before.Efficiency(), c.After.Efficiency()
	factors := table{columns: []column{{"factor", true}, {"before", false}, {"fitted", false}, {"", true}}}
	for _, f := range []struct {
		name          string
		before, after string
	}{
		{perfmodel.FactorDense, sig(eb.Dense, 3), sig(ea.Dense, 3)},
		{perfmodel.FactorElementwise, sig(eb.Elementwise, 3), sig(ea.Elementwise, 3)},
		{perfmodel.FactorBandwidth, sig(eb.Bandwidth, 3), sig(ea.Bandwidth, 3)},
		{perfmodel.FactorKernelOverhead, micros(c.Before.KernelOverhead), micros(c.After.KernelOverhead)},
		{perfmodel.FactorCopy, sig(eb.Copy, 3), sig(ea.Copy, 3)},
		{perfmodel.FactorCopyOverhead, micros(eb.CopyOverhead), micros(ea.CopyOverhead)},
	} {
		note := ""
		if slices.Contains(c.Kept, f.name) {
			note = "kept (its rate): no sample decides it"
		}
		factors.rows = append(factors.rows, []string{f.name, f.before, f.after, note})
	}
	factors.notes = append(factors.notes,
		fmt.Sprintf("peaks: FP32 %s GFLOP/s, memory %s GB/s, copies %s GB/s before; %s, %s and %s fitted (a peak the device beat is raised)",
			sig(c.Before.FP32/1e9, 3), sig(c.Before.MemBandwidth/1e9, 3), sig(c.Before.PageableH2D/1e9, 3),
			sig(c.After.FP32/1e9, 3), sig(c.After.MemBandwidth/1e9, 3), sig(c.After.PageableH2D/1e9, 3)),
		fmt.Sprintf("fitted to %d kernel and copy runs: median model error %s before, %s after",
			len(c.Samples), percent(perfmodel.MedianError(c.Before, c.Samples)), percent(perfmodel.MedianError(c.After, c.Samples))))

	held := table{columns: []column{{"held-out run", true}, {"measured (ms)", false}, {"before (ms)", false}, {"after (ms)", false}}}
	for _, s := range c.HeldOut {
		held.rows = append(held.rows, []string{s.Name, millis(s.Time), millis(s.Model(c.Before)), millis(s.Model(c.After))})
	}
	held.notes = append(held.notes,
		fmt.Sprintf("held out (not fitted): median model error %s before, %s after",
			percent(perfmodel.MedianError(c.Before, c.HeldOut)), percent(perfmodel.MedianError(c.After, c.HeldOut))),
		"error: |model − measured| / measured, per run; measured: the median of the timed epochs")
	var b strings.Builder
	factors.writeText(&b)
	b.WriteString("\n")
	held.writeText(&b)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the calibration: %w", err)
	}
	return nil
}

// micros renders a duration in µs to three significant digits.
func micros(d time.Duration) string { return sig(d.Seconds()*1e6, 3) + " µs" }

// millis renders a duration in ms to three significant digits.
func millis(d time.Duration) string { return sig(d.Seconds()*1e3, 3) }

// percent renders a fraction as a whole percentage, "-" for NaN.
func percent(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}
