package report

import (
	"fmt"
	"io"
	"strings"

	"gpuz/internal/perfmodel"
	"gpuz/internal/units"
)

// WriteProfiles writes the GPU profiles that --device sim:PROFILE takes,
// one row each: the peak FP32 rate, the memory bandwidth and size, the
// host link and the copy rates each way from pinned and pageable host
// memory; then a note per profile with its full name, and where the
// figures come from.
func WriteProfiles(w io.Writer, profiles []perfmodel.Profile) error {
	t := table{columns: []column{{"profile", true}, {"FP32 TFLOP/s", false}, {"memory GB/s", false}, {"memory", false},
		{"link", true}, {"pinned GB/s", false}, {"pageable GB/s", false}}}
	for _, p := range profiles {
		link := "-"
		if p.PCIeGen > 0 {
			link = fmt.Sprintf("PCIe %d.0 x%d", p.PCIeGen, p.PCIeLanes)
		}
		t.rows = append(t.rows, []string{p.Name, sig(p.FP32/1e12, 3), sig(p.MemBandwidth/1e9, 3),
			units.Bytes(p.MemoryBytes), link, pair(p.PinnedH2D, p.PinnedD2H), pair(p.PageableH2D, p.PageableD2H)})
		t.notes = append(t.notes, p.Name+": "+p.Title)
	}
	t.notes = append(t.notes, "Peaks from the vendors' published figures; copy rates (host to device/device to host "+
		"where they differ) derived from the link where the vendor gives none. Sources and derivations: docs/model.md.")
	var b strings.Builder
	t.writeText(&b)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the profiles table: %w", err)
	}
	return nil
}

// pair renders two copy rates, host to device and device to host, in GB/s
// as "a/b", or one figure when they are equal.
func pair(a, b float64) string {
	if a == b {
		return sig(a/1e9, 3)
	}
	return sig(a/1e9, 3) + "/" + sig(b/1e9, 3)
}
