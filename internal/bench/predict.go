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
	// Kernels and Copies are the epoch as perfmodel counts it, what the
	// prediction was made from: with a measured time, a sample that the
	// epoch can be predicted from again on another profile
	// (perfmodel.Sample; gpuz calibrate's held-out runs).
	Kernels []perfmodel.Kernel
	Copies  perfmodel.Copies
	// Generation is a generation's passes, predicted apart (the generate
	// task only; nil otherwise): the prediction above is the whole
	// generation's, its prefill and Tokens−1 decode passes.
	Generation *GenerationPrediction
}

// predictEpoch converts one epoch of a mode for perfmodel and predicts it
// on p: the per-batch work times batches, as kernels, and the epoch's
// copies, from pageable host memory under the window policies (DictCache's
// synchronous .to() copies) and from pinned staging otherwise (the auto
// policy's prefetch, and a resident mode's inputs), at p's efficiency.
func predictEpoch(work engine.Work, batches int, copies engine.Copies, pl engine.Placement, p perfmodel.Profile) Prediction {
	kernels := kernelsOf(work, int64(batches))
	c := perfmodel.Copies{
		H2DBytes: copies.UploadBytes, D2HBytes: copies.DownloadBytes, SyncBytes: copies.SyncBytes(),
		Pageable: pageable(pl), Count: copies.Count, Migrated: pl.PageBytes() > 0, RemoteBytes: copies.RemoteBytes,
	}
	return Prediction{Profile: p.Name, Prediction: perfmodel.Predict(kernels, c, p, p.Efficiency()), Kernels: kernels, Copies: c}
}

// pageable reports whether pl pages blocks under a policy that copies
// from pageable host memory (the window policies).
func pageable(pl engine.Placement) bool {
	c, ok := pl.Paging()
	return ok && c.Pageable()
}

// profileFor returns the profile a mode's predictions are made on, false
// when it has none: the cpu mode's is Options.HostProfile; the cuda and
// cache modes' is their device's own (its caps' Profile: sim:PROFILE), or
// on a real GPU (a ComputeCapability) one measured on it once per run
// (perfmodel.Measured from device.Measure: its SGEMM rate, memory
// bandwidth and copy rates).
func (opts Options) profileFor(mode Mode, dev device.Device, caps device.Caps) (perfmodel.Profile, bool) {
	if !mode.Predicted() {
		return perfmodel.Profile{}, false
	}
	if mode.OnHost() {
		if opts.HostProfile == nil {
			return perfmodel.Profile{}, false
		}
		return *opts.HostProfile, true
	}
	if caps.Profile != nil {
		return *caps.Profile, true
	}
	if caps.ComputeCapability != "" && opts.measured != nil {
		return opts.measured.of(dev)
	}
	return perfmodel.Profile{}, false
}

// measureGemmN is the n of the n×n×n SGEMM a run times on a real GPU for
// its measured profile: large enough to reach a GPU's SGEMM rate, a few
// milliseconds on one.
const measureGemmN = 4096

// measuredProfiles measures each real GPU of a run once, by name, for the
// predictions of its modes.
type measuredProfiles struct {
	gemmN    int // n of the SGEMM timed
	profiles map[string]perfmodel.Profile
	failed   map[string]bool
}

// newMeasuredProfiles returns an empty cache that times n×n×n SGEMMs.
func newMeasuredProfiles(n int) *measuredProfiles {
	return &measuredProfiles{gemmN: n, profiles: map[string]perfmodel.Profile{}, failed: map[string]bool{}}
}

// of returns dev's measured profile, measuring it the first time; false
// when the measurement failed (the mode then has no prediction, and runs).
func (m *measuredProfiles) of(dev device.Device) (perfmodel.Profile, bool) {
	name := dev.Name()
	if p, ok := m.profiles[name]; ok {
		return p, true
	}
	if m.failed[name] {
		return perfmodel.Profile{}, false
	}
	info, err := device.Measure(dev, m.gemmN)
	if err != nil || info.GemmFLOPS <= 0 || info.Bandwidth <= 0 {
		m.failed[name] = true
		return perfmodel.Profile{}, false
	}
	p := perfmodel.Measured(name, info.Total, info.GemmFLOPS, info.Bandwidth,
		info.UploadPinned, info.DownloadPinned, info.UploadPageable, info.DownloadPageable)
	m.profiles[name] = p
	return p, true
}
