package report

import (
	"bytes"
	"fmt"
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"gpuz/internal/device"
	"gpuz/internal/units"
)

// asciiTable is a table in the style of the other reports: ASCII rules,
// headers as given, the first leftAligned columns on the left and the rest
// on the right.
func asciiTable(w io.Writer, header []string, leftAligned int) *tablewriter.Table {
	align := make(tw.Alignment, len(header))
	for i := range align {
		align[i] = tw.AlignRight
		if i < leftAligned {
			align[i] = tw.AlignLeft
		}
	}
	return tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithAlignment(align),
	)
}

// rate renders a rate in units of scale with a unit, or "-" when 0.
func rate(v, scale float64, unit string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3g %s", v/scale, unit)
}

// WriteDevices writes one row per device: its name, compute capability,
// free and total memory, the copy rates between host and device memory
// (pinned and pageable, each way) and the speed of an n×n×n SGEMM.
func WriteDevices(w io.Writer, devs []device.Info) error {
	var b bytes.Buffer
	gemm := "SGEMM"
	if len(devs) > 0 {
		gemm = fmt.Sprintf("SGEMM %d³", devs[0].GemmSize)
	}
	header := []string{"device", "compute", "free", "total", "H→D pinned", "D→H pinned", "H→D pageable", "D→H pageable", gemm}
	table := asciiTable(&b, header, 1)
	table.Header(header)
	for _, d := range devs {
		cc := d.Capability
		if cc == "" {
			cc = "-"
		}
		if err := table.Append([]string{d.Name, cc, units.Bytes(d.Free), units.Bytes(d.Total),
			rate(d.UploadPinned, 1e9, "GB/s"), rate(d.DownloadPinned, 1e9, "GB/s"),
			rate(d.UploadPageable, 1e9, "GB/s"), rate(d.DownloadPageable, 1e9, "GB/s"),
			rate(d.GemmFLOPS, 1e9, "GFLOP/s")}); err != nil {
			return fmt.Errorf("devices table: %w", err)
		}
	}
	if err := table.Render(); err != nil {
		return fmt.Errorf("devices table: %w", err)
	}
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
	table := asciiTable(&b, header, 2)
	table.Header(header)
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
		if err := table.Append([]string{name, kind, fmt.Sprintf("%.2g", maxErr), tol, result}); err != nil {
			return fmt.Errorf("self-test table: %w", err)
		}
	}
	if err := table.Render(); err != nil {
		return fmt.Errorf("self-test table: %w", err)
	}
	if failed > 0 {
		fmt.Fprintf(&b, "%d of %d checks FAILED\n", failed, r.CheckCount())
	} else {
		fmt.Fprintf(&b, "all %d checks passed\n", r.CheckCount())
	}
	_, err := w.Write(b.Bytes())
	return err
}
