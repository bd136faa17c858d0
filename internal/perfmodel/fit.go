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

// Fit fits p's efficiency and fixed cost per kernel to measured samples by
// least squares, FlexGen's lesson: a cost model's constants come from
// runs, not spec sheets. Each sample times kernels alone or copies alone.
//
// With the profile's peaks fixed, the model time of a kernel sample is
// linear in six unknowns once each kernel's side of its roofline is chosen:
// the seconds per FLOP of a dense and of an element-wise kernel
// (1/(FP32·Dense), 1/(FP32·Elementwise)), the seconds per byte of device
// memory (1/(MemBandwidth·Bandwidth)) and per launch (KernelOverhead); a
// copy sample's is linear in 1/Copy and CopyOverhead. Fit minimises the sum
// of squared relative errors (each row divided by its measured time, so
// that a 10 µs run counts as much as a 100 ms one), chooses each kernel's
// side again at the solution, and repeats until the choice holds. A factor
// that no sample decides (element-wise kernels that are never bound by
// compute, say) keeps p's value and is listed in Kept; a fixed cost fitted
// below 0 is 0. A fraction fitted above 1 means the device ran faster than
// the profile's peak: the peak is raised to the rate reached and the
// fraction is 1, so that the bound stays a bound.
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
	e := p.Efficiency()
	x := []float64{1 / frac(e.Dense), 1 / frac(e.Elementwise), 1 / frac(e.Bandwidth),
		max(p.KernelOverhead.Seconds(), 0), 1 / frac(e.Copy), max(e.CopyOverhead.Seconds(), 0)}
	var kept []string
	var sides [][]bool
	for range maxReassign {
		next := kernelSides(p, e, x, samples)
		if slices.EqualFunc(next, sides, slices.Equal) {
			break
		}
		sides = next
		var err error
		if x, kept, err = solve(p, e, x, samples, sides); err != nil {
			return FitResult{}, err
		}
	}
	return FitResult{Profile: fitted(p, e, x), Kept: kept}, nil
}

// factorNames are the unknowns' factors, in the order of Fit's vector.
var factorNames = []string{FactorDense, FactorElementwise, FactorBandwidth, FactorKernelOverhead, FactorCopy, FactorCopyOverhead}

// kernelSides says, for each sample's each kernel, whether it is bound by
// compute (true) or by memory at the unknowns x.
func kernelSides(p Profile, e Efficiency, x []float64, samples []Sample) [][]bool {
	sides := make([][]bool, len(samples))
	for i, s := range samples {
		sides[i] = make([]bool, len(s.Kernels))
		for j, k := range s.Kernels {
			perFLOP := x[1]
			if isDense(e, k.Name) {
				perFLOP = x[0]
			}
			sides[i][j] = nonneg(k.FLOPs)/p.FP32*perFLOP >= nonneg(k.Bytes)/p.MemBandwidth*x[2]
		}
	}
	return sides
}

// isDense says the kernel called name runs as an SGEMM under e.
func isDense(e Efficiency, name string) bool {
	return slices.ContainsFunc(e.DenseKernels, func(d string) bool { return strings.EqualFold(d, name) })
}

// solve returns the least-squares unknowns for the kernels' sides, the
// columns that no sample touches kept at x's values (and named), and a
// fixed cost that comes out negative fixed at 0.
func solve(p Profile, e Efficiency, x []float64, samples []Sample, sides [][]bool) ([]float64, []string, error) {
	n := len(factorNames)
	rows := make([][]float64, len(samples))
	for i, s := range samples {
		row := make([]float64, n)
		for j, k := range s.Kernels {
			switch {
			case sides[i][j] && isDense(e, k.Name):
				row[0] += nonneg(k.FLOPs) / p.FP32
			case sides[i][j]:
				row[1] += nonneg(k.FLOPs) / p.FP32
			default:
				row[2] += nonneg(k.Bytes) / p.MemBandwidth
			}
			row[3] += nonneg(k.Launches)
		}
		up, down := p.PinnedH2D, p.PinnedD2H
		if s.Copies.Pageable {
			up, down = p.PageableH2D, p.PageableD2H
		}
		row[4] = div(nonneg(s.Copies.H2DBytes), up) + div(nonneg(s.Copies.D2HBytes), down)
		row[5] = nonneg(s.Copies.Count)
		rows[i] = row
	}
	fixed := make([]bool, n)
	var kept []string
	for c := range n {
		if !slices.ContainsFunc(rows, func(r []float64) bool { return r[c] > 0 }) {
			fixed[c], kept = true, append(kept, factorNames[c])
		}
	}
	for {
		var free []int
		for c := range n {
			if !fixed[c] {
				free = append(free, c)
			}
		}
		if len(free) == 0 {
			return nil, nil, errors.New("fitting the model: the samples decide no factor")
		}
		if len(free) > len(samples) {
			return nil, nil, fmt.Errorf("fitting the model: %d samples for %d factors", len(samples), len(free))
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
			return nil, nil, fmt.Errorf("fitting the model: the samples do not separate the factors %v: %w", factorsOf(free), err)
		}
		out := slices.Clone(x)
		refit := false
		for j, c := range free {
			v := sol.AtVec(j)
			switch {
			case (c == 3 || c == 5) && v < 0:
				out[c], fixed[c], refit = 0, true, true
			case c != 3 && c != 5 && !(v > 0):
				return nil, nil, fmt.Errorf("fitting the model: %s came out at %g per unit: the samples do not decide it", factorNames[c], v)
			default:
				out[c] = v
			}
		}
		if refit {
			x = out
			continue
		}
		return out, kept, nil
	}
}

// factorsOf returns the names of the factors of columns cols.
func factorsOf(cols []int) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = factorNames[c]
	}
	return out
}

// fitted returns p with the unknowns x as its efficiency and fixed cost
// per kernel, raising a peak that a fraction above 1 shows too low.
func fitted(p Profile, e Efficiency, x []float64) Profile {
	dense, elem, bw, cp := 1/x[0], 1/x[1], 1/x[2], 1/x[4]
	if top := max(dense, elem); top > 1 {
		p.FP32 *= top
		dense, elem = dense/top, elem/top
	}
	if bw > 1 {
		p.MemBandwidth *= bw
		bw = 1
	}
	if cp > 1 {
		p.PinnedH2D, p.PinnedD2H, p.PageableH2D, p.PageableD2H = p.PinnedH2D*cp, p.PinnedD2H*cp, p.PageableH2D*cp, p.PageableD2H*cp
		cp = 1
	}
	p.KernelOverhead = duration(x[3])
	f := Efficiency{Dense: dense, Elementwise: elem, Bandwidth: bw, Copy: cp, CopyOverhead: duration(x[5])}
	if !slices.Equal(e.DenseKernels, DefaultEfficiency.DenseKernels) {
		f.DenseKernels = slices.Clone(e.DenseKernels)
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
