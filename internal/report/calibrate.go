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
// held-out runs (small workload runs, not fitted) it checks the fit on,
// round by round.
type Calibration struct {
	Before, After perfmodel.Profile
	// Kept names the factors no sample decided (perfmodel.FitResult).
	Kept    []string
	Samples []perfmodel.Sample
	// HeldOut are the held-out runs of each round, the same runs in the
	// same order every round.
	HeldOut [][]perfmodel.Sample
}

// WriteCalibration writes the fitted factors beside the ones before (each
// kernel class's too), the model's median error on the fitted samples, and
// a row per held-out run with its median measured time over the rounds,
// their spread and the model time before and after, then the held-out
// runs' median error before and after, on the medians and in each round.
func WriteCalibration(w io.Writer, c Calibration) error {
	eb, ea := c.Before.Efficiency(), c.After.Efficiency()
	factors := table{columns: []column{{"factor", true}, {"before", false}, {"fitted", false}, {"", true}}}
	type factor struct{ name, kept, before, after string }
	rows := []factor{
		{perfmodel.FactorDense, perfmodel.FactorDense, sig(eb.Dense, 3), sig(ea.Dense, 3)},
		{perfmodel.FactorElementwise, perfmodel.FactorElementwise, sig(eb.Elementwise, 3), sig(ea.Elementwise, 3)},
		{perfmodel.FactorBandwidth, perfmodel.FactorBandwidth, sig(eb.Bandwidth, 3), sig(ea.Bandwidth, 3)},
		{perfmodel.FactorKernelOverhead, perfmodel.FactorKernelOverhead, micros(c.Before.KernelOverhead), micros(c.After.KernelOverhead)},
		{perfmodel.FactorCopy, perfmodel.FactorCopy, sig(eb.Copy, 3), sig(ea.Copy, 3)},
		{perfmodel.FactorCopyOverhead, perfmodel.FactorCopyOverhead, micros(eb.CopyOverhead), micros(ea.CopyOverhead)},
	}
	for _, class := range ea.Classes {
		cb, bb, ob := c.Before.KernelFactors(class.Kernels[0])
		for _, f := range []struct{ factor, before, after string }{
			{perfmodel.FactorCompute, sig(cb, 3), sig(class.Compute, 3)},
			{perfmodel.FactorBandwidth, sig(bb, 3), sig(class.Bandwidth, 3)},
			{perfmodel.FactorOverhead, micros(ob), micros(class.Overhead)},
		} {
			rows = append(rows, factor{class.Name + " " + f.factor, class.Name + " " + f.factor, f.before, f.after})
		}
	}
	for _, f := range rows {
		note := ""
		if slices.Contains(c.Kept, f.kept) {
			note = "kept: no sample decides it"
		}
		factors.rows = append(factors.rows, []string{f.name, f.before, f.after, note})
	}
	factors.notes = append(factors.notes,
		fmt.Sprintf("peaks: FP32 %s GFLOP/s, memory %s GB/s, copies %s GB/s before; %s, %s and %s fitted (a peak the device beat is raised)",
			sig(c.Before.FP32/1e9, 3), sig(c.Before.MemBandwidth/1e9, 3), sig(c.Before.PageableH2D/1e9, 3),
			sig(c.After.FP32/1e9, 3), sig(c.After.MemBandwidth/1e9, 3), sig(c.After.PageableH2D/1e9, 3)),
		"a class's factors replace the ones above for its kernels (products, convolutions, attention, normalisation); the rest are element-wise",
		fmt.Sprintf("fitted to %d op and copy runs (each the median of %d rounds): median model error %s before, %s after",
			len(c.Samples), len(c.HeldOut), percent(perfmodel.MedianError(c.Before, c.Samples)), percent(perfmodel.MedianError(c.After, c.Samples))))

	medians := medianRuns(c.HeldOut)
	held := table{columns: []column{{"held-out run", true}, {"measured (ms)", false}, {"spread (ms)", false}, {"before (ms)", false}, {"after (ms)", false}}}
	for i, s := range medians {
		lo, hi := s.Time, s.Time
		for _, round := range c.HeldOut {
			lo, hi = min(lo, round[i].Time), max(hi, round[i].Time)
		}
		held.rows = append(held.rows, []string{s.Name, millis(s.Time), millis(lo) + "–" + millis(hi), millis(s.Model(c.Before)), millis(s.Model(c.After))})
	}
	var each []string
	for _, round := range c.HeldOut {
		each = append(each, percent(perfmodel.MedianError(c.Before, round))+" → "+percent(perfmodel.MedianError(c.After, round)))
	}
	held.notes = append(held.notes,
		fmt.Sprintf("held out (not fitted): median model error %s before, %s after", percent(perfmodel.MedianError(c.Before, medians)), percent(perfmodel.MedianError(c.After, medians))),
		fmt.Sprintf("each round, before → after: %s", strings.Join(each, ", ")),
		fmt.Sprintf("error: |model − measured| / measured, per run; measured: the median over %d rounds of each run's median timed epoch; spread: their least and most", len(c.HeldOut)))
	var b strings.Builder
	factors.writeText(&b)
	b.WriteString("\n")
	held.writeText(&b)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the calibration: %w", err)
	}
	return nil
}

// medianRuns returns the first round's runs, each with the median of its
// measured times over the rounds (the lower middle one for an even count).
func medianRuns(rounds [][]perfmodel.Sample) []perfmodel.Sample {
	if len(rounds) == 0 {
		return nil
	}
	out := slices.Clone(rounds[0])
	for i := range out {
		var times []time.Duration
		for _, round := range rounds {
			if i < len(round) {
				times = append(times, round[i].Time)
			}
		}
		slices.Sort(times)
		out[i].Time = times[(len(times)-1)/2]
	}
	return out
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
