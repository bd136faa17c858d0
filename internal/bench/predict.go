package bench

import (
	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/perfmodel"
)

// Prediction is what a profile's device could do with one epoch of a
// mode: perfmodel's bound and model time for the epoch's kernels and
// copies, and the profile it is for.
type Prediction struct {
	// Profile is the profile's name ("rtx4060-laptop", "cpu-i7-13700h").
	Profile string
	perfmodel.Prediction
}

// predictEpoch converts one epoch of a mode for perfmodel and predicts it
// on p: the per-batch work times batches, as kernels, and the epoch's
// copies, from pageable host memory under the window policy (DictCache's
// synchronous .to() copies) and from pinned staging otherwise (the auto
// policy's prefetch, and a resident mode's inputs).
func predictEpoch(work engine.Work, batches int, copies engine.Copies, pl engine.Placement, p perfmodel.Profile) Prediction {
	n := int64(batches)
	kernels := make([]perfmodel.Kernel, len(work.Kernels))
	for i, k := range work.Kernels {
		kernels[i] = perfmodel.Kernel{Name: k.Name, Launches: n * k.Launches, FLOPs: n * k.FLOPs, Bytes: n * k.Bytes}
	}
	c := perfmodel.Copies{
		H2DBytes: copies.UploadBytes, D2HBytes: copies.DownloadBytes, SyncBytes: copies.SyncBytes(),
		Pageable: pl.Paged && pl.Policy == engine.PolicyWindow, Count: copies.Count,
	}
	return Prediction{Profile: p.Name, Prediction: perfmodel.Predict(kernels, c, p, perfmodel.DefaultEfficiency)}
}

// profileFor returns the profile a mode's predictions are made on, false
// when it has none: the cpu mode's is Options.HostProfile; the cuda and
// cache modes' is their device's own (device.Profiled: sim:PROFILE). A
// real CUDA device reports none: device.Measure times an SGEMM and copies
// but not the memory bandwidth, and a measured rate is not a peak, so
// such a device gets no prediction.
func (opts Options) profileFor(mode Mode, dev device.Device) (perfmodel.Profile, bool) {
	if mode == ModeCPU {
		if opts.HostProfile == nil {
			return perfmodel.Profile{}, false
		}
		return *opts.HostProfile, true
	}
	if p, ok := dev.(device.Profiled); ok {
		return p.Profile()
	}
	return perfmodel.Profile{}, false
}
