package fit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"gpuz/internal/bench"
	"gpuz/internal/results"
	"gpuz/internal/stats"
	"gpuz/internal/units"
)

// Check is one configuration of a search run to check it: its entry and
// rank (0 for the cpu when unranked), what the run measured and whether
// its peak matched the plan.
type Check struct {
	Entry
	Rank int
	Run  bench.ModeResult
	// Measured is the median of the run's timed epochs, 0 when none
	// completed.
	Measured time.Duration
	// Simulated says the device is the simulated GPU: its times are host
	// times, and its peak is checked against the planned device need.
	Simulated bool
	// PeakChecked says the peak was compared with the plan (on sim, for
	// every placement on the device that completed: the managed mode's
	// included, as it runs with the margin held, see Verify); PeakMatches
	// is the comparison.
	PeakChecked, PeakMatches bool
}

// Ratio is the measured epoch time over the predicted one, NaN without
// either.
func (c Check) Ratio() float64 {
	p := c.Predicted()
	if p <= 0 || c.Measured <= 0 {
		return math.NaN()
	}
	return c.Measured.Seconds() / p
}

// Verification is what running a search's best configurations found.
type Verification struct {
	Checks []Check
	// Tau is Kendall's rank correlation between the predicted and the
	// measured epoch times of the checks that have both: 1 when the
	// measured order is the predicted one, -1 when it is reversed; NaN
	// with fewer than MinTauPoints such checks.
	Tau float64
	// TauPoints is the number of checks with both a predicted and a
	// measured time: what Tau is computed from.
	TauPoints int
}

// MinTauPoints is the fewest configurations with both times that Kendall's
// τ is computed from. With n of them a random order agrees fully with the
// predicted one once in n!: from two points τ is ±1 whatever the model,
// from three a full agreement happens by chance once in 6, and from four
// once in 24 (under 5%, the usual threshold).
const MinTauPoints = 4

// Verify runs the k best configurations of r (the ranked ones, else the
// unranked ones in their order) and the cpu, each alone with
// opts.TakeBytes held on the device as another program would hold it,
// and returns predicted against measured. The managed mode's residency
// follows the free memory, and the search planned it against the budget
// (the free memory less the margin): its run holds the margin too, so that
// it sees the free memory its plan assumed and its peak can be checked
// against that plan as every other placement's. progress, when set, sees
// the runs' events, as bench.Sweep's.
func Verify(ctx context.Context, opts Options, r Result, k int, progress func(bench.Event)) (Verification, error) {
	checks := picks(r, k)
	configs, err := runConfigs(opts, r, checks)
	if err != nil {
		return Verification{}, err
	}
	s, err := bench.Sweep(ctx, bench.SweepOptions{Parameters: []string{"configuration"}, Configs: configs, Progress: progress})
	if err != nil {
		return Verification{}, err
	}
	v := Verification{Tau: math.NaN()}
	var predicted, measured []float64
	for i, row := range s.Rows {
		c := checks[i]
		if len(row.Result.Modes) != 1 {
			return Verification{}, fmt.Errorf("%s: the run returned %d modes, want 1", c.Candidate, len(row.Result.Modes))
		}
		c.Run = row.Result.Modes[0]
		c.Measured = median(c.Run.Timed())
		c.Simulated = c.Run.Simulated
		c.PeakChecked, c.PeakMatches = c.checkPeak()
		if c.Measured > 0 && c.Predicted() > 0 {
			predicted, measured = append(predicted, c.Predicted()), append(measured, c.Measured.Seconds())
		}
		v.Checks = append(v.Checks, c)
	}
	v.Tau, v.TauPoints = kendall(predicted, measured), len(predicted)
	return v, nil
}

// runConfigs returns the run of each check: its mode alone with its
// configuration at its batch, holding opts.TakeBytes on the device (the managed mode
// the margin too, see Verify; the cpu mode, which has no device, nothing).
func runConfigs(opts Options, r Result, checks []Check) ([]bench.SweepConfig, error) {
	configs := make([]bench.SweepConfig, len(checks))
	for i, c := range checks {
		o, err := AtBatch(opts.Bench, c.Batch)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Candidate, err)
		}
		o.Modes, o.Config = []bench.Mode{c.Mode}, c.Config
		configs[i] = bench.SweepConfig{Options: o, Settings: []bench.Setting{{Name: "configuration", Value: c.Candidate.String()}}}
		switch {
		case c.Mode.OnHost():
		case c.Mode.Migrates():
			configs[i].TakeBytes = opts.TakeBytes + max(r.DeviceFree-r.Budget, 0)
		default:
			configs[i].TakeBytes = opts.TakeBytes
		}
	}
	return configs, nil
}

// checkPeak says whether c's peak is compared with its plan (a placement
// on the simulated device that completed) and whether it is the plan's
// device need exactly: a peak below the plan fails as one above it does,
// as the plan is then wrong all the same.
func (c Check) checkPeak() (checked, matches bool) {
	if !c.Simulated || c.Mode.OnHost() || c.Run.Status.Kind != bench.StatusOK {
		return false, false
	}
	return true, c.Run.PeakDeviceBytes == c.Plan.Footprint.Device
}

// kendall is Kendall's τ of x and y, NaN from fewer than MinTauPoints
// pairs.
func kendall(x, y []float64) float64 {
	if len(x) < MinTauPoints {
		return math.NaN()
	}
	return stat.Kendall(x, y, nil)
}

// picks returns the checks Verify runs: the k best and the cpu once.
func picks(r Result, k int) []Check {
	var out []Check
	list, ranked := r.Ranked, true
	if len(list) == 0 {
		list, ranked = r.Unranked, false
	}
	cpu := false
	for i, e := range list[:min(k, len(list))] {
		c := Check{Entry: e}
		if ranked {
			c.Rank = i + 1
		}
		cpu = cpu || e.Mode.OnHost()
		out = append(out, c)
	}
	if !cpu && r.CPU.Fits {
		c := Check{Entry: r.CPU}
		if i := slices.IndexFunc(r.Ranked, func(e Entry) bool { return e.Mode == r.CPU.Mode && !e.HasLevers() }); i >= 0 {
			c.Rank = i + 1
		}
		out = append(out, c)
	}
	return out
}

// median is the median duration of epochs (stats.Summarize's: the mean
// of the middle two of an even count), 0 for none.
func median(epochs []bench.Epoch) time.Duration {
	return stats.Summarize(results.Durations(epochs)).Median
}

// Err says why the verification fails, nil when it does not: a
// configuration the search recommended (ranked, or the cpu) that did not
// complete (out of memory above all: the plan said it fits), or whose
// peak on the simulated device differs from its planned need (the managed
// mode's included: it ran within its budget, see Verify).
func (v Verification) Err() error {
	var why []string
	for _, c := range v.Checks {
		switch {
		case c.Run.Status.Kind != bench.StatusOK:
			why = append(why, fmt.Sprintf("%s: %s", c.Candidate, c.Run.Status))
		case c.PeakChecked && !c.PeakMatches:
			why = append(why, fmt.Sprintf("%s: peak %s on %s, planned %s", c.Candidate,
				units.Bytes(c.Run.PeakDeviceBytes), c.Run.Device, units.Bytes(c.Plan.Footprint.Device)))
		}
	}
	if len(why) == 0 {
		return nil
	}
	return errors.New("verifying the fit: " + strings.Join(why, "; "))
}
