package gpu

import (
	"slices"
	"strings"
	"testing"
)

// TestChooseArch checks the architecture chosen for pairs of NVRTC release
// and GPU: the GPU's own where that NVRTC can target it, else PTX of the
// newest older architecture it can.
func TestChooseArch(t *testing.T) {
	for _, c := range []struct {
		nvrtc        NVRTCVersion
		major, minor int
		want         string
		native       bool
	}{
		{NVRTCVersion{11, 8}, 5, 2, "compute_52", true},
		{NVRTCVersion{11, 8}, 6, 3, "compute_62", false}, // no such architecture: the one below
		{NVRTCVersion{11, 8}, 8, 6, "compute_86", true},
		{NVRTCVersion{11, 8}, 8, 9, "compute_89", true},
		{NVRTCVersion{11, 8}, 9, 0, "compute_90", true}, // H100
		{NVRTCVersion{11, 8}, 10, 0, "compute_90", false},
		{NVRTCVersion{11, 8}, 12, 0, "compute_90", false},
		{NVRTCVersion{11, 2}, 8, 9, "compute_86", false},
		{NVRTCVersion{11, 2}, 3, 5, "compute_35", true},
		{NVRTCVersion{12, 4}, 7, 5, "compute_75", true},
		{NVRTCVersion{12, 4}, 9, 0, "compute_90", true},
		{NVRTCVersion{12, 4}, 10, 0, "compute_90", false}, // B200 under 12.4
		{NVRTCVersion{12, 4}, 12, 0, "compute_90", false}, // RTX 50 series under 12.4
		{NVRTCVersion{12, 8}, 10, 0, "compute_100", true},
		{NVRTCVersion{12, 8}, 10, 3, "compute_101", false},
		{NVRTCVersion{12, 8}, 12, 0, "compute_120", true},
		{NVRTCVersion{12, 8}, 12, 1, "compute_120", false},
		{NVRTCVersion{12, 9}, 12, 1, "compute_121", true},
		{NVRTCVersion{13, 0}, 7, 5, "compute_75", true},
		{NVRTCVersion{13, 0}, 9, 0, "compute_90", true},
		{NVRTCVersion{13, 0}, 10, 0, "compute_100", true},
		{NVRTCVersion{13, 0}, 11, 0, "compute_110", true},
		{NVRTCVersion{13, 0}, 12, 0, "compute_120", true},
		{NVRTCVersion{13, 1}, 12, 1, "compute_121", true},  // a later 13.x: the 13.0 row
		{NVRTCVersion{13, 0}, 13, 0, "compute_121", false}, // a GPU newer than the table
	} {
		got, err := ChooseArch(c.nvrtc, KnownArchs(c.nvrtc), c.major, c.minor)
		if err != nil || got.Arch != c.want || got.Native != c.native {
			t.Errorf("NVRTC %s, compute capability %d.%d: %q native %v, %v; want %q native %v",
				c.nvrtc, c.major, c.minor, got.Arch, got.Native, err, c.want, c.native)
		}
	}
}

// TestChooseArchTooOld checks that a GPU older than every architecture the
// NVRTC compiles for is an error that says so and names the way out.
func TestChooseArchTooOld(t *testing.T) {
	for _, c := range []struct {
		nvrtc        NVRTCVersion
		major, minor int
		oldest       string
	}{
		{NVRTCVersion{11, 8}, 3, 0, "3.5"},
		{NVRTCVersion{12, 4}, 3, 7, "5.0"},
		{NVRTCVersion{13, 0}, 7, 0, "7.5"}, // V100 under CUDA 13
		{NVRTCVersion{13, 0}, 6, 1, "7.5"},
	} {
		_, err := ChooseArch(c.nvrtc, KnownArchs(c.nvrtc), c.major, c.minor)
		if err == nil || !strings.Contains(err.Error(), "the oldest it supports is "+c.oldest) || !strings.Contains(err.Error(), "make cuda CUDA=") {
			t.Errorf("NVRTC %s, compute capability %d.%d: error %v; want one naming %s and an older build", c.nvrtc, c.major, c.minor, err, c.oldest)
		}
	}
	if _, err := ChooseArch(NVRTCVersion{12, 4}, nil, 9, 0); err == nil {
		t.Error("an empty list of architectures: no error")
	}
	if _, err := ChooseArch(NVRTCVersion{12, 4}, KnownArchs(NVRTCVersion{12, 4}), 9, 10); err == nil {
		t.Error("compute capability 9.10: no error")
	}
}

// TestKnownArchs checks the table's edges: nothing before 11.2, the rows
// sorted, and a newer release than the table gets its newest row.
func TestKnownArchs(t *testing.T) {
	if a := KnownArchs(NVRTCVersion{11, 1}); a != nil {
		t.Errorf("KnownArchs(11.1) = %v, want nil", a)
	}
	for _, k := range knownArchs {
		if !slices.IsSorted(k.archs) {
			t.Errorf("the %s row is not sorted: %v", k.since, k.archs)
		}
	}
	if !slices.Equal(KnownArchs(NVRTCVersion{14, 2}), knownArchs[len(knownArchs)-1].archs) {
		t.Error("KnownArchs(14.2) is not the newest row")
	}
	a := KnownArchs(NVRTCVersion{12, 4})
	a[0] = 0
	if KnownArchs(NVRTCVersion{12, 4})[0] == 0 {
		t.Error("KnownArchs returns the table itself, not a copy")
	}
}

// TestArchChoiceString checks that the logged choice names the
// architecture, the NVRTC and, for PTX of an older one, the GPU.
func TestArchChoiceString(t *testing.T) {
	native, _ := ChooseArch(NVRTCVersion{12, 4}, KnownArchs(NVRTCVersion{12, 4}), 9, 0)
	if s := native.String(); !strings.Contains(s, "compute_90, the GPU's own architecture (NVRTC 12.4)") {
		t.Errorf("native choice: %q", s)
	}
	ptx, _ := ChooseArch(NVRTCVersion{12, 4}, KnownArchs(NVRTCVersion{12, 4}), 12, 0)
	if s := ptx.String(); !strings.Contains(s, "compute_90 PTX: NVRTC 12.4 cannot target compute capability 12.0") || !strings.Contains(s, "JIT") {
		t.Errorf("PTX choice: %q", s)
	}
}
