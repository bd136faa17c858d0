package report

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"gpuz/internal/device"
	"gpuz/internal/units"
)

// writeTable renders a table as every report's text tables are (table's
// writeText: headings, a rule of dashes, columns two spaces apart), into
// w: the columns whose indices left lists aligned left and the rest right.
func writeTable(w *bytes.Buffer, header []string, left []int, rows [][]string) {
	t := table{columns: make([]column, len(header)), rows: rows}
	for i, h := range header {
		t.columns[i] = column{name: h, left: slices.Contains(left, i)}
	}
	var b strings.Builder
	t.writeText(&b)
	w.WriteString(b.String())
}

// rate renders a rate in units of scale with a unit, or "-" when 0.
func rate(v, scale float64, unit string) string {
	if v == 0 {
		return "-"
	}
	return sig(v/scale, 3) + " " + unit
}

// WriteDevices writes one row per device: its name, compute capability,
// free and total memory, the copy rates between host and device memory
// (pinned and pageable, each way), the speed of an n×n×n SGEMM and the
// device memory's bandwidth.
func WriteDevices(w io.Writer, devs []device.Info) error {
	var b bytes.Buffer
	gemm := "SGEMM"
	if len(devs) > 0 {
		gemm = fmt.Sprintf("SGEMM %d³", devs[0].GemmSize)
	}
	header := []string{"device", "compute", "free", "total", "H→D pinned", "D→H pinned", "H→D pageable", "D→H pageable", gemm, "memory"}
	var rows [][]string
	for _, d := range devs {
		cc := d.Capability
		if cc == "" {
			cc = "-"
		}
		rows = append(rows, []string{d.Name, cc, units.Bytes(d.Free), units.Bytes(d.Total),
			rate(d.UploadPinned, 1e9, "GB/s"), rate(d.DownloadPinned, 1e9, "GB/s"),
			rate(d.UploadPageable, 1e9, "GB/s"), rate(d.DownloadPageable, 1e9, "GB/s"),
			rate(d.GemmFLOPS, 1e9, "GFLOP/s"), rate(d.Bandwidth, 1e9, "GB/s")})
	}
	writeTable(&b, header, []int{0}, rows)
	_, err := w.Write(b.Bytes())
	return err
}

// SelftestResult is a self-test as WriteSelftest prints it: the device
// tested and its checks. selftest.Result is one; the interface keeps report
// from depending on the self-test's package.
type SelftestResult interface {
	// DeviceName is the name of the device tested.
	DeviceName() string
	// CheckCount is the number of checks.
	CheckCount() int
	// CheckRow is check i: its name and kind, its largest normalised
	// error and its tolerance (0: bit-identical), and what failed, "" when
	// it passed.
	CheckRow(i int) (name, kind string, maxErr, tolerance float64, problem string)
}

// WriteSelftest writes a self-test's checks, one row each with the largest
// normalised error and the tolerance, then a summary line.
func WriteSelftest(w io.Writer, r SelftestResult) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Self-test of %s against the host (cpu)\n", r.DeviceName())
	header := []string{"check", "kind", "largest error", "tolerance", "result"}
	var rows [][]string
	failed := 0
	for i := range r.CheckCount() {
		name, kind, maxErr, tolerance, problem := r.CheckRow(i)
		result := "pass"
		if problem != "" {
			result = "FAIL: " + problem
			failed++
		}
		tol := fmt.Sprintf("%.0e", tolerance)
		if tolerance == 0 {
			tol = "bit-identical"
		}
		rows = append(rows, []string{name, kind, fmt.Sprintf("%.2g", maxErr), tol, result})
	}
	writeTable(&b, header, []int{0, 1}, rows)
	if failed > 0 {
		fmt.Fprintf(&b, "%d of %d checks FAILED\n", failed, r.CheckCount())
	} else {
		fmt.Fprintf(&b, "all %d checks passed\n", r.CheckCount())
	}
	_, err := w.Write(b.Bytes())
	return err
}
