// Package stats summarises a sample of measured times, as gpuz's tables,
// charts and results documents show them: the mean, deviation, median
// and extremes (Summarize), the mean's Student-t interval (MeanCI) and
// the median's distribution-free interval (MedianCI, as benchstat
// computes it), both at the level Confidence. It removes no outliers.
package stats

import (
	"errors"
	"math"
	"slices"
	"time"

	"golang.org/x/perf/benchmath"
	"gonum.org/v1/gonum/stat/distuv"
)

// Summary summarizes a sample of durations.
type Summary struct {
	N      int           // number of durations
	Mean   time.Duration // arithmetic mean
	Stddev time.Duration // sample standard deviation (n-1 denominator); 0 when N < 2
	Median time.Duration // the middle value, or the mean of the two middle values
	Min    time.Duration // the shortest
	Max    time.Duration // the longest
}

// Summarize computes the Summary of durations, all of them: it removes no
// outliers. Results are rounded down to the nanosecond, except Stddev, which
// is rounded to the nearest. An empty sample gives the zero Summary.
func Summarize(durations []time.Duration) Summary {
	n := len(durations)
	if n == 0 {
		return Summary{}
	}
	sorted := slices.Clone(durations)
	slices.Sort(sorted)

	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	mean := sum / time.Duration(n)

	var stddev time.Duration
	if n > 1 {
		exact := float64(sum) / float64(n)
		var sq float64
		for _, d := range sorted {
			dev := float64(d) - exact
			sq += dev * dev
		}
		stddev = time.Duration(math.Round(math.Sqrt(sq / float64(n-1))))
	}

	median := sorted[n/2]
	if n%2 == 0 {
		lo := sorted[n/2-1]
		median = lo + (median-lo)/2
	}

	return Summary{
		N:      n,
		Mean:   mean,
		Stddev: stddev,
		Median: median,
		Min:    sorted[0],
		Max:    sorted[n-1],
	}
}

// Confidence is the level of the confidence intervals.
const Confidence = 0.95

// MedianCI summarizes seconds by their median and its confidence interval
// at the level Confidence, assuming nothing of their distribution
// (benchmath.AssumeNothing, as benchstat does). Lo and Hi are infinite when
// the sample is too small for an interval at that level; Warnings then
// says how many values it needs.
func MedianCI(seconds []float64) benchmath.Summary {
	return benchmath.AssumeNothing.Summary(benchmath.NewSample(slices.Clone(seconds), &benchmath.DefaultThresholds), Confidence)
}

// errOneValue is MeanCI's warning for a sample of one: a mean's interval
// needs two values.
var errOneValue = errors.New("a mean needs >= 2 samples for a confidence interval")

// MeanCI summarizes seconds by their mean and its confidence interval at
// the level Confidence: the mean ± t·s/√n, t the Student-t quantile of
// n−1 degrees of freedom (the interval of a mean of normal draws, defined
// from 2 values on). Lo and Hi are infinite for a single value, with a
// warning, and Center is NaN for none.
func MeanCI(seconds []float64) benchmath.Summary {
	n := float64(len(seconds))
	if n == 0 {
		return benchmath.Summary{Center: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1), Confidence: Confidence}
	}
	mean := 0.0
	for _, v := range seconds {
		mean += v
	}
	mean /= n
	if n < 2 {
		return benchmath.Summary{Center: mean, Lo: math.Inf(-1), Hi: math.Inf(1), Confidence: Confidence, Warnings: []error{errOneValue}}
	}
	ss := 0.0
	for _, v := range seconds {
		ss += (v - mean) * (v - mean)
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(0.5 + Confidence/2)
	half := t * math.Sqrt(ss/(n-1)/n)
	return benchmath.Summary{Center: mean, Lo: mean - half, Hi: mean + half, Confidence: Confidence}
}
