package gpu

import (
	"fmt"
	"slices"
)

// NVRTCVersion is an NVRTC release, as nvrtcVersion reports it.
type NVRTCVersion struct{ Major, Minor int }

func (v NVRTCVersion) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// less reports whether v is older than w.
func (v NVRTCVersion) less(w NVRTCVersion) bool {
	return v.Major < w.Major || v.Major == w.Major && v.Minor < w.Minor
}

// knownArchs lists the virtual architectures each NVRTC release compiles
// for, as compute capability major·10 + minor, from the release that first
// had the list to the next row. The running NVRTC's own list
// (nvrtcGetSupportedArchs) is used when it can be read; this table is the
// fallback and the test's reference. The 11.8 and 12.4 rows are checked
// against those NVRTC libraries by `make test-cuda`; the others are from
// NVIDIA's release notes and unchecked here.
var knownArchs = []struct {
	since NVRTCVersion
	archs []int
}{
	{NVRTCVersion{11, 2}, []int{35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86}},
	{NVRTCVersion{11, 4}, []int{35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87}},
	{NVRTCVersion{11, 8}, []int{35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90}},
	// 12.0 dropped Kepler.
	{NVRTCVersion{12, 0}, []int{50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90}},
	// 12.8 added Blackwell.
	{NVRTCVersion{12, 8}, []int{50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 120}},
	{NVRTCVersion{12, 9}, []int{50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 120, 121}},
	// 13.0 dropped Maxwell, Pascal and Volta and renamed 10.1 to 11.0.
	{NVRTCVersion{13, 0}, []int{75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121}},
}

// KnownArchs returns the virtual architectures NVRTC release v compiles
// for by the table above (a release newer than the table gets the newest
// row), or nil for a release older than 11.2, which cannot list them.
func KnownArchs(v NVRTCVersion) []int {
	var archs []int
	for _, k := range knownArchs {
		if !v.less(k.since) {
			archs = k.archs
		}
	}
	return slices.Clone(archs)
}

// ArchChoice is the architecture the kernels are compiled for on one GPU.
type ArchChoice struct {
	// Arch is the NVRTC --gpu-architecture, e.g. "compute_90".
	Arch string
	// Native is true when Arch is the GPU's own architecture; false when
	// the NVRTC in use cannot target the GPU, and Arch is the newest
	// older architecture it can, whose PTX the driver JIT-compiles for
	// the GPU.
	Native bool
	// GPU is the GPU's compute capability, e.g. "12.0"; NVRTC the
	// release that compiles.
	GPU   string
	NVRTC NVRTCVersion
}

// String says what was chosen and why, for logs and the run's record.
func (c ArchChoice) String() string {
	if c.Native {
		return fmt.Sprintf("%s, the GPU's own architecture (NVRTC %s)", c.Arch, c.NVRTC)
	}
	return fmt.Sprintf("%s PTX: NVRTC %s cannot target compute capability %s, so the kernels are compiled for the newest architecture it can and the driver JIT-compiles them", c.Arch, c.NVRTC, c.GPU)
}

// ChooseArch picks the architecture to compile the kernels for on a GPU of
// compute capability major.minor with an NVRTC of release v that compiles
// for the architectures supported (major·10 + minor, any order): the GPU's
// own when supported has it, otherwise the newest supported one older than
// the GPU (PTX is forward compatible: the driver JIT-compiles it for the
// GPU). A GPU older than every supported architecture is an error: NVRTC
// cannot compile for it.
func ChooseArch(v NVRTCVersion, supported []int, major, minor int) (ArchChoice, error) {
	cc := 10*major + minor
	c := ArchChoice{GPU: fmt.Sprintf("%d.%d", major, minor), NVRTC: v}
	if major < 0 || minor < 0 || minor > 9 {
		return c, fmt.Errorf("compute capability %s is not one a GPU reports", c.GPU)
	}
	if len(supported) == 0 {
		return c, fmt.Errorf("NVRTC %s lists no architecture it compiles for", v)
	}
	best := -1
	for _, a := range supported {
		if a <= cc && a > best {
			best = a
		}
	}
	if best < 0 {
		return c, fmt.Errorf("NVRTC %s cannot compile for compute capability %s: the oldest it supports is %d.%d; use a build against an older CUDA (make cuda CUDA=12.4 or CUDA=11.8)",
			v, c.GPU, slices.Min(supported)/10, slices.Min(supported)%10)
	}
	c.Arch = fmt.Sprintf("compute_%d", best)
	c.Native = best == cc
	return c, nil
}
