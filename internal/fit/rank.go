package fit

import (
	"cmp"
	"slices"
	"time"
)

// TieFraction is the relative difference between two predicted epoch
// times within which fit calls them a tie and ranks the simpler
// configuration first (docs/fit.md, "Ties and levers that change the
// results"): 5%, below what the model's factors resolve.
const TieFraction = 0.05

// ResultsGainFraction is what a configuration that changes the results
// (16 bits, the other attention) must gain to rank above one that does
// not: it must be predicted faster by more than this fraction of its own
// time (docs/fit.md says why 25%). Where nothing that keeps the results
// fits, it ranks by its time alone.
const ResultsGainFraction = 0.25

// ChangesResults reports whether c's results (losses, outputs) differ
// from its configuration's with every lever at its default: 16 bits round
// them, quantized weights round the weights to their kind's levels, and
// the other attention (fused against eager) sums in another order.
// Recompute leaves them bit-identical.
func (c Candidate) ChangesResults() bool {
	return c.Precision.Half() || c.Attention != "" || c.Weights.Quantized()
}

// simpler orders two configurations by how simple they are to run and
// trust, the simpler first: one that keeps the results before one that
// changes them, then by mode (bench.Mode.Simplicity, the modes
// table's: cuda, cpu, cache, managed, hybrid), then without levers before with, then 32 bits before 16.
func simpler(a, b Entry) int {
	return cmp.Or(cmpBool(a.ChangesResults(), b.ChangesResults()),
		cmp.Compare(a.Mode.Simplicity(), b.Mode.Simplicity()),
		cmpBool(a.HasLevers(), b.HasLevers()),
		cmpBool(a.Precision.Half(), b.Precision.Half()))
}

// beats reports whether a must rank above b whatever their simplicity:
// a is predicted faster than b by more than a tie, or, where a changes
// the results and b does not, by more than ResultsGainFraction of a's
// time.
func beats(a, b Entry) bool {
	gain := TieFraction
	if a.ChangesResults() && !b.ChangesResults() {
		gain = ResultsGainFraction
	}
	return float64(a.RankTime())*(1+gain) < float64(b.RankTime())
}

// rankByPrediction orders entries that all have a prediction: at each
// place, of the entries left that no other entry left beats, the simplest
// (then the fastest, then the smallest device need, then the first
// given). The fastest entry left is always among them, so no entry ranks
// above one that beats it, and among a tie the simplest comes first.
func rankByPrediction(entries []Entry) []Entry {
	left := slices.Clone(entries)
	out := make([]Entry, 0, len(left))
	for len(left) > 0 {
		// The fastest left that keeps the results and that changes them:
		// whoever beats an entry, one of these does.
		var fastKeep, fastChange *Entry
		for i := range left {
			e := &left[i]
			p := &fastKeep
			if e.ChangesResults() {
				p = &fastChange
			}
			if *p == nil || e.RankTime() < (*p).RankTime() {
				*p = e
			}
		}
		pick := -1
		for i, e := range left {
			if (fastKeep != nil && beats(*fastKeep, e)) || (fastChange != nil && beats(*fastChange, e)) {
				continue
			}
			if pick < 0 || cmp.Or(simpler(e, left[pick]),
				cmp.Compare(e.RankTime(), left[pick].RankTime()),
				cmp.Compare(e.Plan.Footprint.Device, left[pick].Plan.Footprint.Device)) < 0 {
				pick = i
			}
		}
		out = append(out, left[pick])
		left = slices.Delete(left, pick, pick+1)
	}
	return out
}

// tiedWith returns the fastest ranked configuration when the recommended
// one (the first ranked) is not it: the recommended is within a tie of it,
// or keeps the results where the fastest changes them and gains less than
// ResultsGainFraction. ok is false when the first ranked is the fastest.
func (r Result) tiedWith() (fastest Entry, ok bool) {
	if len(r.Ranked) == 0 {
		return Entry{}, false
	}
	best := r.Ranked[0].RankTime()
	min := time.Duration(-1)
	for _, e := range r.Ranked[1:] {
		if p := e.RankTime(); p < best && (min < 0 || p < min) {
			fastest, min, ok = e, p, true
		}
	}
	return fastest, ok
}

// RankTime is the predicted time the ranking compares: a generation's
// decode pass (what its tokens per second follow), else the epoch.
func (e Entry) RankTime() time.Duration {
	if g := e.Plan.Prediction.Generation; g != nil {
		return g.Decode.Model
	}
	return e.Plan.Prediction.Model
}
