package perfmodel

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"
)

// Sample is one timed run on a device: what the model counts of it (its
// kernels, or its copies) and how long it took.
type Sample struct {
	// Name says what ran, e.g. "Gemm 256×256×256 ×40".
	Name    string
	Kernels []Kernel
	Copies  Copies
	// Time is the run's measured time.
	Time time.Duration
}

// Model returns the sample's model time on p at p's efficiency.
func (s Sample) Model(p Profile) time.Duration {
	return Predict(s.Kernels, s.Copies, p, p.Efficiency()).Model
}

// The factors Fit fits, as FitResult.Kept names them.
const (
	FactorDense          = "Dense"
	FactorElementwise    = "Elementwise"
	FactorBandwidth      = "Bandwidth"
	FactorKernelOverhead = "KernelOverhead"
	FactorCopy           = "Copy"
	FactorCopyOverhead   = "CopyOverhead"
)

// FitResult is a profile fitted to samples.
type FitResult struct {
	// Profile is the profile given with its efficiency (Fitted) and fixed
	// cost per kernel (KernelOverhead) fitted, and a peak raised where the
	// samples ran faster than it (see Fit).
	Profile Profile
	// Kept names the factors that no sample decided, which keep the
	// given profile's values.
	Kept []string
}

// maxReassign bounds Fit's rounds of choosing each kernel's bound side.
const maxReassign = 20

// Fit fits p's efficiency and fixed costs per kernel to measured samples
// by least squares, FlexGen's lesson: a cost model's constants come from
// runs, not spec sheets. Each sample times kernels alone or copies alone.
//
// The kernels of each class of KernelClasses (or of p's own classes, when
// its efficiency has some) get factors of their own; every other kernel
// has the efficiency's. With the profile's peaks fixed, the model time of
// a kernel sample is linear in the unknowns once each kernel's side of its
// roofline is chosen: for the kernels outside the classes, the seconds per
// FLOP of a dense and of an element-wise kernel (1/(FP32·Dense),
// 1/(FP32·Elementwise)), per byte of device memory
// (1/(MemBandwidth·Bandwidth)) and per launch (KernelOverhead); for each
// class its seconds per FLOP, per byte and per launch; a copy sample's is
// linear in 1/Copy and CopyOverhead. Fit minimises the sum of squared
// relative errors (each row divided by its measured time, so that a 10 µs
// run counts as much as a 100 ms one), chooses each kernel's side again at
// the solution, and repeats until the choice holds. A factor that no
// sample decides (element-wise kernels that are never bound by compute,
// say, or a rate that comes out at 0 or below) keeps its starting value
// (p's, a class's starting from the factors its kernels had in p) and is
// listed in Kept; a fixed cost fitted below 0 is 0. A fraction fitted
// above 1 means the device ran faster than the profile's peak: the peak is
// raised to the rate reached and every fraction scaled down with it, so
// that the bound stays a bound. A fitted profile with a figure outside the
// plausibility bounds that a profile file is held to (MinRate, MaxOverhead,
// MinFraction, …) is an error naming the field: gpuz calibrate would
// write a profile that no command could read.
func Fit(p Profile, samples []Sample) (FitResult, error) {
	if len(samples) == 0 {
		return FitResult{}, errors.New("fitting the model: no samples")
	}
	for _, s := range samples {
		if !(s.Time > 0) {
			return FitResult{}, fmt.Errorf("fitting the model: sample %q: no measured time", s.Name)
		}
		hasCopies := s.Copies.H2DBytes > 0 || s.Copies.D2HBytes > 0 || s.Copies.Count > 0
		if len(s.Kernels) > 0 && hasCopies || s.Copies.Migrated || s.Copies.RemoteBytes > 0 {
			return FitResult{}, fmt.Errorf("fitting the model: sample %q: a sample times kernels alone or plain copies alone", s.Name)
		}
	}
	u := newUnknowns(p)
	var kept []string
	var sides [][]bool
	for range maxReassign {
		next := u.sides(samples)
		if slices.EqualFunc(next, sides, slices.Equal) {
			break
		}
		sides = next
		var err error
		if kept, err = u.solve(samples, sides); err != nil {
			return FitResult{}, err
		}
	}
	fitted := u.fitted()
	if err := checkBounds(fitted); err != nil {
		return FitResult{}, fmt.Errorf("fitting the model: the samples give an implausible profile: %w", err)
	}
	return FitResult{Profile: fitted, Kept: kept}, nil
}

// The columns of Fit's unknowns before the classes' (each class has
// classColumns more: its seconds per FLOP, per byte and per launch).
const (
	colDense = iota
	colElementwise
	colBandwidth
	colKernelOverhead
	colCopy
	colCopyOverhead
	baseColumns
	classColumns = 3
)

// baseFactors are the names of the columns before the classes'.
var baseFactors = []string{FactorDense, FactorElementwise, FactorBandwidth, FactorKernelOverhead, FactorCopy, FactorCopyOverhead}

// The factors of a class, as FitResult.Kept names them after the class's
// name ("products Compute").
const (
	FactorCompute  = "Compute"
	FactorOverhead = "Overhead"
)

// unknowns are Fit's unknowns: the profile fitted, its efficiency, the
// classes whose kernels have factors of their own, and the values x by
// column.
type unknowns struct {
	p       Profile
	e       Efficiency
	classes []KernelClass
	x       []float64
}

// newUnknowns starts the fit of p at p's factors: its efficiency's classes
// when it has some, else KernelClasses each at the factors its first
// kernel has in p.
func newUnknowns(p Profile) *unknowns {
	e := p.Efficiency()
	classes := slices.Clone(e.Classes)
	if len(classes) == 0 {
		classes = KernelClasses()
		for i := range classes {
			c, b, o := e.factors(classes[i].Kernels[0], p)
			classes[i].Compute, classes[i].Bandwidth, classes[i].Overhead = c, b, duration(o)
		}
	}
	x := []float64{1 / frac(e.Dense), 1 / frac(e.Elementwise), 1 / frac(e.Bandwidth),
		max(p.KernelOverhead.Seconds(), 0), 1 / frac(e.Copy), max(e.CopyOverhead.Seconds(), 0)}
	for _, c := range classes {
		x = append(x, 1/frac(c.Compute), 1/frac(c.Bandwidth), max(c.Overhead.Seconds(), 0))
	}
	e.Classes = classes
	return &unknowns{p: p, e: e, classes: classes, x: x}
}

// columns returns the columns of the kernel called name's seconds per
// FLOP, per byte and per launch.
func (u *unknowns) columns(name string) (flop, byte, launch int) {
	for i, c := range u.classes {
		if slices.ContainsFunc(c.Kernels, func(k string) bool { return strings.EqualFold(k, name) }) {
			col := baseColumns + classColumns*i
			return col, col + 1, col + 2
		}
	}
	if isDense(u.e, name) {
		return colDense, colBandwidth, colKernelOverhead
	}
	return colElementwise, colBandwidth, colKernelOverhead
}

// name is the factor of column col, as FitResult.Kept names it.
func (u *unknowns) name(col int) string {
	if col < baseColumns {
		return baseFactors[col]
	}
	c := u.classes[(col-baseColumns)/classColumns]
	return c.Name + " " + []string{FactorCompute, FactorBandwidth, FactorOverhead}[(col-baseColumns)%classColumns]
}

// fixedCost says column col is a fixed cost (seconds per launch or per
// copy) rather than the inverse of a fraction.
func fixedCost(col int) bool {
	return col == colKernelOverhead || col == colCopyOverhead || col >= baseColumns && (col-baseColumns)%classColumns == 2
}

// sides says, for each sample's each kernel, whether it is bound by
// compute (true) or by memory at the unknowns' values.
func (u *unknowns) sides(samples []Sample) [][]bool {
	sides := make([][]bool, len(samples))
	for i, s := range samples {
		sides[i] = make([]bool, len(s.Kernels))
		for j, k := range s.Kernels {
			flop, byte, _ := u.columns(k.Name)
			sides[i][j] = nonneg(k.FLOPs)/u.p.FP32*u.x[flop] >= nonneg(k.Bytes)/u.p.MemBandwidth*u.x[byte]
		}
	}
	return sides
}

// isDense says the kernel called name runs as an SGEMM under e.
func isDense(e Efficiency, name string) bool {
	return slices.ContainsFunc(e.DenseKernels, func(d string) bool { return strings.EqualFold(d, name) })
}

// solve sets the unknowns to their least-squares values for the kernels'
// sides and returns the names of the factors it kept: the columns that no
// sample touches and the rates that come out at 0 or below keep their
// values, a fixed cost that comes out below 0 is 0.
func (u *unknowns) solve(samples []Sample, sides [][]bool) ([]string, error) {
	p, n := u.p, len(u.x)
	rows := make([][]float64, len(samples))
	for i, s := range samples {
		row := make([]float64, n)
		for j, k := range s.Kernels {
			flop, byte, launch := u.columns(k.Name)
			if sides[i][j] {
				row[flop] += nonneg(k.FLOPs) / p.FP32
			} else {
				row[byte] += nonneg(k.Bytes) / p.MemBandwidth
			}
			row[launch] += nonneg(k.Launches)
		}
		up, down := p.PinnedH2D, p.PinnedD2H
		if s.Copies.Pageable {
			up, down = p.PageableH2D, p.PageableD2H
		}
		row[colCopy] = div(nonneg(s.Copies.H2DBytes), up) + div(nonneg(s.Copies.D2HBytes), down)
		row[colCopyOverhead] = nonneg(s.Copies.Count)
		rows[i] = row
	}
	fixed := make([]bool, n)
	var kept []string
	for c := range n {
		if !slices.ContainsFunc(rows, func(r []float64) bool { return r[c] > 0 }) {
			fixed[c], kept = true, append(kept, u.name(c))
		}
	}
	x := slices.Clone(u.x)
	for {
		var free []int
		for c := range n {
			if !fixed[c] {
				free = append(free, c)
			}
		}
		if len(free) == 0 {
			return nil, errors.New("fitting the model: the samples decide no factor")
		}
		if len(free) > len(samples) {
			return nil, fmt.Errorf("fitting the model: %d samples for %d factors", len(samples), len(free))
		}
		a := mat.NewDense(len(samples), len(free), nil)
		b := mat.NewVecDense(len(samples), nil)
		for i, s := range samples {
			t := s.Time.Seconds()
			rest := t
			for c := range n {
				if fixed[c] {
					rest -= rows[i][c] * x[c]
				}
			}
			for j, c := range free {
				a.Set(i, j, rows[i][c]/t)
			}
			b.SetVec(i, rest/t)
		}
		var sol mat.VecDense
		if err := sol.SolveVec(a, b); err != nil {
			return nil, fmt.Errorf("fitting the model: the samples do not separate the factors %v: %w", u.names(free), err)
		}
		refit := false
		for j, c := range free {
			switch v := sol.AtVec(j); {
			case fixedCost(c) && v < 0:
				x[c], fixed[c], refit = 0, true, true
			case !fixedCost(c) && !(v > 0):
				fixed[c], refit, kept = true, true, append(kept, u.name(c))
			default:
				x[c] = v
			}
		}
		if !refit {
			u.x = x
			return kept, nil
		}
	}
}

// names returns the names of the factors of columns cols.
func (u *unknowns) names(cols []int) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = u.name(c)
	}
	return out
}

// fitted returns the profile with the unknowns as its efficiency and fixed
// costs per kernel, raising a peak that a fraction above 1 shows too low
// (and scaling every fraction of that peak down with it).
func (u *unknowns) fitted() Profile {
	p, x := u.p, u.x
	computes, bandwidths := []float64{1 / x[colDense], 1 / x[colElementwise]}, []float64{1 / x[colBandwidth]}
	for i := range u.classes {
		col := baseColumns + classColumns*i
		computes, bandwidths = append(computes, 1/x[col]), append(bandwidths, 1/x[col+1])
	}
	topC, topB := max(slices.Max(computes), 1), max(slices.Max(bandwidths), 1)
	p.FP32, p.MemBandwidth = p.FP32*topC, p.MemBandwidth*topB
	cp := 1 / x[colCopy]
	if cp > 1 {
		p.PinnedH2D, p.PinnedD2H, p.PageableH2D, p.PageableD2H = p.PinnedH2D*cp, p.PinnedD2H*cp, p.PageableH2D*cp, p.PageableD2H*cp
		cp = 1
	}
	// A profile file reads a KernelOverhead of 0 as missing: 1 ns is as
	// good as none.
	p.KernelOverhead = max(duration(x[colKernelOverhead]), time.Nanosecond)
	f := Efficiency{Dense: computes[0] / topC, Elementwise: computes[1] / topC, Bandwidth: bandwidths[0] / topB, Copy: cp,
		CopyOverhead: duration(x[colCopyOverhead])}
	if !slices.Equal(u.e.DenseKernels, DefaultEfficiency.DenseKernels) {
		f.DenseKernels = slices.Clone(u.e.DenseKernels)
	}
	for i, c := range u.classes {
		c.Kernels = slices.Clone(c.Kernels)
		c.Compute, c.Bandwidth = computes[2+i]/topC, bandwidths[1+i]/topB
		c.Overhead = duration(x[baseColumns+classColumns*i+2])
		f.Classes = append(f.Classes, c)
	}
	p.Fitted = &f
	p.Sources = append(slices.Clone(p.Sources), "fitted by least squares to measured kernel and copy times (gpuz calibrate, perfmodel.Fit): Fitted, KernelOverhead and any peak the device beat replace the figures above")
	return p
}

// MedianError returns the median over samples of |model − measured| /
// measured, the model on p at p's efficiency; NaN for no samples.
func MedianError(p Profile, samples []Sample) float64 {
	if len(samples) == 0 {
		return math.NaN()
	}
	errs := make([]float64, len(samples))
	for i, s := range samples {
		errs[i] = math.Abs(float64(s.Model(p)-s.Time)) / float64(s.Time)
	}
	slices.Sort(errs)
	if n := len(errs); n%2 == 0 {
		return (errs[n/2-1] + errs[n/2]) / 2
	}
	return errs[len(errs)/2]
}
