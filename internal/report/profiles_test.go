package report

import (
	"io"
	"strings"
	"testing"

	"gpuz/internal/perfmodel"
)

func TestWriteProfiles(t *testing.T) {
	profiles := []perfmodel.Profile{
		{Name: "rtx4060-laptop", Title: "NVIDIA GeForce RTX 4060 Laptop GPU 8 GB", FP32: 11e12, MemBandwidth: 256e9,
			MemoryBytes: 8 << 30, PCIeGen: 4, PCIeLanes: 8, PinnedH2D: 12e9, PinnedD2H: 12e9, PageableH2D: 6e9, PageableD2H: 5e9},
		perfmodel.HostProfile(100e9, 10e9),
	}
	got := written(t, func(w io.Writer) error { return WriteProfiles(w, profiles) })
	want := `profile         FP32 TFLOP/s  memory GB/s    memory  link         pinned GB/s  pageable GB/s
--------------  ------------  -----------  --------  -----------  -----------  -------------
rtx4060-laptop          11.0          256  8.00 GiB  PCIe 4.0 x8         12.0      6.00/5.00
host                   0.100         20.0       0 B  -                   10.0           10.0
`
	if !strings.HasPrefix(got, want) {
		t.Errorf("WriteProfiles wrote\n%s\nwant it to start\n%s", got, want)
	}
	for _, note := range []string{"rtx4060-laptop: NVIDIA GeForce RTX 4060 Laptop GPU 8 GB\n", "docs/model.md."} {
		if !strings.Contains(got, note) {
			t.Errorf("WriteProfiles lacks %q:\n%s", note, got)
		}
	}
	for _, line := range strings.Split(written(t, func(w io.Writer) error { return WriteProfiles(w, perfmodel.Profiles()) }), "\n") {
		if width(line) > maxWidth {
			t.Errorf("line of %d columns: %s", width(line), line)
		}
	}
	if err := WriteProfiles(errWriter{}, profiles); err == nil {
		t.Error("WriteProfiles to a failing writer: no error")
	}
}
