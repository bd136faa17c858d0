package calibration

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"gpuz/internal/perfmodel"
)

// MedianProfile returns the first profile with each measured rate (FP32,
// memory bandwidth, copy rates) the median of the profiles': the model
// before fitting, less moved by a busy moment of a shared machine than one
// measurement. Each round of gpuz calibrate measures one profile; with no
// profiles it returns an error.
func MedianProfile(profiles []perfmodel.Profile) (perfmodel.Profile, error) {
	if len(profiles) == 0 {
		return perfmodel.Profile{}, errors.New("no profiles to take the median of")
	}
	p := profiles[0]
	for _, f := range []func(*perfmodel.Profile) *float64{
		func(q *perfmodel.Profile) *float64 { return &q.FP32 },
		func(q *perfmodel.Profile) *float64 { return &q.MemBandwidth },
		func(q *perfmodel.Profile) *float64 { return &q.PinnedH2D },
		func(q *perfmodel.Profile) *float64 { return &q.PinnedD2H },
		func(q *perfmodel.Profile) *float64 { return &q.PageableH2D },
		func(q *perfmodel.Profile) *float64 { return &q.PageableD2H },
	} {
		vs := make([]float64, len(profiles))
		for i := range profiles {
			vs[i] = *f(&profiles[i])
		}
		*f(&p) = median(vs)
	}
	return p, nil
}

// MedianSamples returns, for each sample of the rounds (each round, one
// Samples, times the same kernels and copies, in the same order, repeated
// as often as its own timing sized them), the round's sample whose time
// per launch or per copy is the median (the lower middle one for an even
// count). Rounds of different lengths, or none, are an error.
func MedianSamples(rounds [][]perfmodel.Sample) ([]perfmodel.Sample, error) {
	if len(rounds) == 0 {
		return nil, errors.New("no rounds of samples to take the median of")
	}
	out := make([]perfmodel.Sample, len(rounds[0]))
	for i := range out {
		var of []perfmodel.Sample
		for r, samples := range rounds {
			if len(samples) != len(out) {
				return nil, fmt.Errorf("round %d timed %d samples, round 1 %d", r+1, len(samples), len(out))
			}
			of = append(of, samples[i])
		}
		slices.SortFunc(of, func(a, b perfmodel.Sample) int { return cmp.Compare(perUnit(a), perUnit(b)) })
		out[i] = of[(len(of)-1)/2]
	}
	return out, nil
}

// perUnit is a sample's time per launch of its kernels, or per copy.
func perUnit(s perfmodel.Sample) float64 {
	n := s.Copies.Count
	for _, k := range s.Kernels {
		n += k.Launches
	}
	return s.Time.Seconds() / float64(max(n, 1))
}

// median returns the median of vs (the mean of the middle two for an even
// count); it sorts vs.
func median(vs []float64) float64 {
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2
	}
	return vs[n/2]
}
