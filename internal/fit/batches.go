package fit

import (
	"cmp"
	"slices"

	"gpuz/internal/bench"
	"gpuz/internal/levers"
	"gpuz/internal/models"
)

// GradAccums is gradient accumulation's dimension of a search at a batch
// of batch samples: in training 1 (the zero value, none) and each power
// of two above it that divides the batch (2, 4, 8, … up to the batch:
// micro-batches of batch/K samples); in evaluation and generation, none.
func GradAccums(train bool, batch int) []levers.GradAccum {
	out := []levers.GradAccum{0}
	for k := 2; train && k <= batch && k <= levers.MaxGradAccum; k *= 2 {
		if batch%k == 0 {
			out = append(out, levers.GradAccum(k))
		}
	}
	return out
}

// gradAccums is GradAccums as a dimension.
func gradAccums(values []levers.GradAccum) dimension {
	d := make(dimension, len(values))
	for i, k := range values {
		d[i] = func(c *Candidate) { c.GradAccum = k }
	}
	return d
}

// AtBatch returns bench options o with batches of batch samples (the
// workload's feed and Options.Batch), checked as --batch is (the samples
// a multiple of it); batch 0 leaves o as it is.
func AtBatch(o bench.Options, batch int) (bench.Options, error) {
	if batch == 0 || batch == o.Batch {
		return o, nil
	}
	w, err := models.WithSize(o.Workload, "batch", batch)
	if err != nil {
		return o, err
	}
	o.Workload, o.Batch = w, batch
	return o, nil
}

// searchBatches is Search over each batch of opts.Batches: a search at
// each, its candidates naming their batch (Candidate.Batch), the results
// merged into one ranking. Each epoch's prediction covers the same
// samples whatever the batch (bench.Options.Samples), so epoch times
// compare the batches as time per sample. The header, the cuda and the
// cpu entries are the first batch's.
func searchBatches(opts Options) (Result, error) {
	var out Result
	for i, batch := range opts.Batches {
		o := opts
		o.Batches = nil
		b, err := AtBatch(opts.Bench, batch)
		if err != nil {
			return Result{}, err
		}
		o.Bench, o.batch = b, batch
		res, err := Search(o)
		if err != nil {
			return Result{}, err
		}
		if i == 0 {
			out = res
			out.Ranked, out.Unranked = nil, nil
		} else {
			out.Searched += res.Searched
			if less(res.Smallest, out.Smallest, func(e Entry) int64 { return e.Plan.Footprint.Device }) {
				out.Smallest = res.Smallest
			}
			if less(res.HostBound, out.HostBound, func(e Entry) int64 { return e.Plan.HostNeed }) {
				out.HostBound = res.HostBound
			}
		}
		out.Ranked = append(out.Ranked, res.Ranked...)
		out.Unranked = append(out.Unranked, res.Unranked...)
	}
	out.Batches = opts.Batches
	out.Ranked = rankByPrediction(out.Ranked)
	slices.SortStableFunc(out.Unranked, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(copied(a), copied(b)), cmp.Compare(a.Plan.Footprint.Device, b.Plan.Footprint.Device))
	})
	return out, nil
}

// less reports whether a is set (Mode not "") and, where b is set too,
// smaller by of.
func less(a, b Entry, of func(Entry) int64) bool {
	return a.Mode != "" && (b.Mode == "" || of(a) < of(b))
}
