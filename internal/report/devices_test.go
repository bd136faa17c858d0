package report

import (
	"io"
	"strings"
	"testing"

	"gpuz/internal/device"
)

func TestWriteDevices(t *testing.T) {
	got := written(t, func(w io.Writer) error {
		return WriteDevices(w, []device.Info{
			{Name: "host", Free: 1 << 30, Total: 2 << 30, UploadPageable: 10e9, DownloadPageable: 12e9, GemmSize: 2000, GemmFLOPS: 150e9, Bandwidth: 20e9},
			{Name: "cuda:0", Capability: "8.6", Free: 20 << 30, Total: 24 << 30, UploadPinned: 25e9, DownloadPinned: 26e9,
				UploadPageable: 11e9, DownloadPageable: 9e9, GemmSize: 2000, GemmFLOPS: 30e12, Bandwidth: 850e9},
		})
	})
	want := `device  compute      free     total  H→D pinned  D→H pinned  H→D pageable  D→H pageable    SGEMM 2000³     memory
------  -------  --------  --------  ----------  ----------  ------------  ------------  -------------  ---------
host          -  1.00 GiB  2.00 GiB           -           -     10.0 GB/s     12.0 GB/s    150 GFLOP/s  20.0 GB/s
cuda:0      8.6  20.0 GiB  24.0 GiB   25.0 GB/s   26.0 GB/s     11.0 GB/s     9.00 GB/s  30000 GFLOP/s   850 GB/s
`
	if got != want {
		t.Errorf("WriteDevices wrote\n%s\nwant\n%s", got, want)
	}
}

// fakeSelftest is a self-test result of two checks, one failed.
type fakeSelftest struct{}

func (fakeSelftest) DeviceName() string { return "sim:8GiB" }
func (fakeSelftest) CheckCount() int    { return 2 }
func (fakeSelftest) CheckRow(i int) (name, kind string, maxErr, tolerance float64, problem string) {
	if i == 0 {
		return "gemm", "kernel", 0, 0, ""
	}
	return "linear step", "training", 3e-3, 1e-4, "too far"
}

func TestWriteSelftest(t *testing.T) {
	out := written(t, func(w io.Writer) error { return WriteSelftest(w, fakeSelftest{}) })
	for _, want := range []string{"Self-test of sim:8GiB against the host (cpu)\n", "\ngemm ", "bit-identical", "pass",
		"\nlinear step ", "0.003", "1e-04", "FAIL: too far", "1 of 2 checks FAILED\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteSelftest lacks %q:\n%s", want, out)
		}
	}
}
