package report

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/units"
)

// WriteHeader writes a few lines that describe the run: the workload, the
// sizes of its data and model, and the host's BLAS and threads. The scale,
// the BLAS and the threads are left out when empty or zero. The threads are
// those in force; a warning line follows when they are fewer than asked.
func WriteHeader(w io.Writer, h bench.Header) error {
	var b strings.Builder
	fmt.Fprintf(&b, "gpuz %s %s", h.Model, h.Task)
	if h.Scale != "" {
		fmt.Fprintf(&b, " (scale %s)", h.Scale)
	}
	fmt.Fprintf(&b, ": %s in batches of %d\n", plural(int64(h.Samples), "sample"), h.Batch)
	fmt.Fprintf(&b, "data: %s   model: %s parameters, %s\n", units.Bytes(h.DataBytes), units.Count(h.Params), units.Bytes(h.ParamBytes))

	var host []string
	if h.BLAS != "" {
		host = append(host, "BLAS "+h.BLAS)
	}
	if h.Threads > 0 {
		host = append(host, plural(int64(h.Threads), "thread"))
	}
	if len(host) > 0 {
		fmt.Fprintf(&b, "host: %s\n", strings.Join(host, ", "))
	}
	if h.ThreadsWarning != "" {
		fmt.Fprintf(&b, "warning: %s\n", h.ThreadsWarning)
	}
	if h.GPU != "" {
		fmt.Fprintf(&b, "devices: cuda and cache on %s, cpu on host\n", h.GPU)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// plural formats n and the noun, adding an s unless n is 1.
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}

// WriteEpoch writes one line for an epoch of task, as in
//
//	train: 0  mean loss: 0.3269  time: 4.35 s  (warm-up)
//	eval: 3  output mean: 0.01234  time: 0.617 s
//
// marking it as a warm-up epoch when warmup is true.
//
// An epoch on a device other than the host says which, so that a time from
// the simulated GPU is never read as a GPU time:
//
//	train: 1  mean loss: 0.3244  time: 4.48 s  on sim:8GiB
func WriteEpoch(w io.Writer, task bench.Task, e bench.Epoch, warmup bool, device string) error {
	label := "value"
	switch task {
	case bench.TaskTrain:
		label = "mean loss"
	case bench.TaskEval:
		label = "output mean"
	}
	suffix := ""
	if device != "" && device != "host" {
		suffix = "  on " + device
	}
	if warmup {
		suffix += "  (warm-up)"
	}
	_, err := fmt.Fprintf(w, "%s: %d  %s: %.4g  time: %s%s\n", task, e.Index, label, e.Value, units.Seconds(e.Duration), suffix)
	return err
}

// WriteModeStart writes the line that opens a mode's section of the
// epoch lines, after a blank line: "== cuda on sim:8GiB ==".
func WriteModeStart(w io.Writer, mode bench.Mode, device string) error {
	_, err := fmt.Fprintf(w, "\n== %s on %s ==\n", mode, device)
	return err
}

// WriteModeEnd writes, for a mode that did not end ok, the line that says
// why, as soon as it ends and in its own section:
//
//	cuda: OOM: needs 5.57 GiB, 4.00 GiB of 8.00 GiB free
//
// A mode that got no device (unavailable, skipped before it started) had
// no section yet; it gets one first, "== cuda ==". A mode that ended ok
// writes nothing: its epoch lines said all.
func WriteModeEnd(w io.Writer, mode bench.Mode, device string, s bench.Status) error {
	if s.Kind == bench.StatusOK {
		return nil
	}
	var b strings.Builder
	if device == "" {
		fmt.Fprintf(&b, "\n== %s ==\n", mode)
	}
	fmt.Fprintf(&b, "%s: %s\n", mode, s)
	_, err := io.WriteString(w, b.String())
	return err
}

// analyzeColumns heads the Analyze table's columns. The cold column is the
// mean of the warm-up epochs; vs cpu is how many times faster than the cpu
// row a mode's mean epoch is; H→D and D→H are the mean bytes a timed epoch
// copied each way, and the copy rate is those bytes over the time the
// copies took.
var analyzeColumns = []string{
	"mode", "device", "epochs", "mean", "stddev", "median", "min", "max",
	"cold", "vs cpu", "peak mem", "H→D/epoch", "D→H/epoch", "copy rate", "status",
}

// WriteAnalyze writes the Analyze table: one row per mode of r, in order,
// with the statistics of its timed epochs, its warm-up time, its speed
// relative to the cpu row, its peak device memory and its status; then the
// process's peak resident set size, when known. A figure that does not apply
// is shown as "-": every figure of a mode that ran no epoch, the standard
// deviation of fewer than two epochs, the speed-up when there is no
// successful cpu row with timed epochs to compare with, and the copies and
// copy rate of the cpu row, which copies nothing between devices.
func WriteAnalyze(w io.Writer, r bench.Result) error {
	cpuMean := cpuReference(r.Modes)
	var rows [][]string
	for _, m := range r.Modes {
		rows = append(rows, analyzeRow(m, cpuMean))
	}
	var b bytes.Buffer
	b.WriteString("Analyze\n")
	if err := writeTable(&b, "analyze", analyzeColumns, []int{0, 1, len(analyzeColumns) - 1}, rows); err != nil {
		return err
	}
	if r.PeakRSSBytes > 0 {
		fmt.Fprintf(&b, "peak RSS of this process: %s\n", units.Bytes(r.PeakRSSBytes))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// cpuReference returns the mean timed epoch of the first successful cpu mode
// that has timed epochs, or 0 when there is none.
func cpuReference(modes []bench.ModeResult) time.Duration {
	for _, m := range modes {
		if m.Mode == bench.ModeCPU && m.Status.Kind == bench.StatusOK && len(m.Timed()) > 0 {
			return Summarize(durations(m.Timed())).Mean
		}
	}
	return 0
}

// analyzeRow returns the cells of m's row in the Analyze table; cpuMean is
// the cpu row's mean epoch, or 0 when there is none to compare with.
func analyzeRow(m bench.ModeResult, cpuMean time.Duration) []string {
	const na = "-"
	epochs, mean, stddev, median, fastest, slowest, cold, vsCPU, peak := na, na, na, na, na, na, na, na, na
	up, down, rate := na, na, na
	if len(m.Epochs) > 0 {
		s := Summarize(durations(m.Timed()))
		epochs = strconv.Itoa(s.N)
		if s.N > 0 {
			mean, median, fastest, slowest = units.Seconds(s.Mean), units.Seconds(s.Median), units.Seconds(s.Min), units.Seconds(s.Max)
		}
		if s.N > 1 {
			stddev = units.Seconds(s.Stddev)
		}
		if warm := m.Epochs[:min(m.Warmup, len(m.Epochs))]; len(warm) > 0 {
			cold = units.Seconds(Summarize(durations(warm)).Mean)
		}
		if cpuMean > 0 && s.Mean > 0 {
			vsCPU = fmt.Sprintf("%.2f×", float64(cpuMean)/float64(s.Mean))
		}
		if m.PeakDeviceBytes > 0 {
			peak = units.Bytes(m.PeakDeviceBytes)
		}
		if timed := m.Timed(); len(timed) > 0 && m.Mode.Copies() {
			var upBytes, downBytes int64
			var copyTime time.Duration
			for _, e := range timed {
				upBytes, downBytes, copyTime = upBytes+e.UploadBytes, downBytes+e.DownloadBytes, copyTime+e.CopyTime
			}
			n := int64(len(timed))
			up, down = units.Bytes(upBytes/n), units.Bytes(downBytes/n)
			if copyTime > 0 {
				rate = fmt.Sprintf("%.3g GB/s", float64(upBytes+downBytes)/copyTime.Seconds()/1e9)
			}
		}
	}
	device := cmp.Or(m.Device, na)
	if m.Placement != "" {
		device += ", " + m.Placement
	}
	return []string{
		string(m.Mode), device, epochs, mean, stddev, median, fastest, slowest,
		cold, vsCPU, peak, up, down, rate, m.Status.String(),
	}
}
