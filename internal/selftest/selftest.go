// Package selftest checks a device against the host: every kernel on small
// random inputs, then two training steps of each workload, in the device's
// cuda mode (resident) and cache mode (paged) against the host engine.
// `gpuz selftest` runs it; its first use is on a CUDA GPU, where nothing
// else has checked the kernels.
package selftest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/hostmath"
	"gpuz/internal/models"
)

// TrainRelTol is the tolerance of the training checks: two Adam steps
// amplify the kernels' last-bit differences (Adam divides by √v, which is
// tiny on the first steps, so a parameter moves by about lr whatever the
// gradient's size and a sign flip of a near-zero gradient moves it by 2·lr);
// the losses and parameters must agree with the host's within
// TrainRelTol·|host| + TrainAbsTol·max|host|.
const (
	TrainRelTol = 1e-3
	TrainAbsTol = 1e-3
)

// Check is the outcome of one comparison.
type Check struct {
	Kind string // "kernel" or "training"
	Name string
	// MaxErr is the largest normalised error: |device − host| divided by
	// the tolerance's allowance for the element, times Tolerance, so that
	// the check passes when MaxErr ≤ Tolerance.
	MaxErr    float64
	Tolerance float64
	// Problem is empty when the check passed, else what failed.
	Problem string
}

// Passed reports whether the check passed.
func (c Check) Passed() bool { return c.Problem == "" }

// Result is a self-test of a device.
type Result struct {
	Device string
	Checks []Check
}

// Failed counts the checks that failed.
func (r Result) Failed() int {
	n := 0
	for _, c := range r.Checks {
		if !c.Passed() {
			n++
		}
	}
	return n
}

// DeviceName is the name of the device tested (for report.WriteSelftest).
func (r Result) DeviceName() string { return r.Device }

// CheckCount is the number of checks.
func (r Result) CheckCount() int { return len(r.Checks) }

// CheckRow is check i's name, kind, largest normalised error, tolerance
// and problem ("" when it passed).
func (r Result) CheckRow(i int) (name, kind string, maxErr, tolerance float64, problem string) {
	c := r.Checks[i]
	return c.Name, c.Kind, c.MaxErr, c.Tolerance, c.Problem
}

// Run checks dev: the kernels, then the training steps.
func Run(dev device.Device) Result {
	r := Result{Device: dev.Name()}
	r.Checks = append(r.Checks, Kernels(dev)...)
	r.Checks = append(r.Checks, Training(dev)...)
	return r
}

// FiniteScale returns the largest magnitude of want's finite elements: the
// scale of a buffer's absolute tolerance, which an infinity (fp16's
// overflow) must not make infinite.
func FiniteScale(want []float32) float64 {
	scale := 0.0
	for _, w := range want {
		if a := math.Abs(float64(w)); !math.IsInf(a, 0) && !math.IsNaN(a) {
			scale = max(scale, a)
		}
	}
	return scale
}

// compare returns the largest normalised error of got against want and a
// problem when an element is out of tolerance or not a number.
func compare(got, want []float32, rel, abs float64) (maxErr float64, problem string) {
	if len(got) != len(want) {
		return math.Inf(1), fmt.Sprintf("%d elements, host %d", len(got), len(want))
	}
	scale := FiniteScale(want)
	for j := range got {
		g, w := float64(got[j]), float64(want[j])
		allow := rel*math.Abs(w) + abs*scale
		e := math.Abs(g - w)
		switch {
		case g == w, math.IsNaN(g) && math.IsNaN(w):
		case math.IsNaN(g) || math.IsNaN(w) || math.IsInf(w, 0):
			return math.Inf(1), fmt.Sprintf("element %d = %v, host %v", j, g, w)
		case allow == 0:
			return math.Inf(1), fmt.Sprintf("element %d = %v, host %v", j, g, w)
		default:
			maxErr = max(maxErr, e/allow*rel)
			if e > allow && problem == "" {
				problem = fmt.Sprintf("element %d = %v, host %v", j, g, w)
			}
		}
	}
	return maxErr, problem
}

// runOn runs a case on a device: the buffers allocated and uploaded, the
// call, the buffers read back.
func runOn(dev device.Device, c Case, data [][]float32) (out [][]float32, value float64, callErr, err error) {
	bufs := make([]device.Buffer, len(data))
	defer func() {
		for _, b := range bufs {
			if b != nil {
				dev.Free(b)
			}
		}
	}()
	for i, d := range data {
		if bufs[i], err = dev.Alloc(len(d)); err != nil {
			return nil, 0, nil, err
		}
		if err = dev.Upload(bufs[i], d); err != nil {
			return nil, 0, nil, err
		}
	}
	value, callErr = c.Call(dev.Kernels(), bufs)
	out = make([][]float32, len(bufs))
	for i, b := range bufs {
		out[i] = make([]float32, b.Len())
		if err = dev.Download(out[i], b); err != nil {
			return nil, 0, nil, err
		}
	}
	return out, value, callErr, nil
}

// Kernels runs every case of Cases on dev and on the host, twice on dev:
// the results must agree with the host's within RelTol and AbsTol, be
// bit-identical from one run to the next (the kernels are deterministic),
// and fail where the host fails, with its message.
func Kernels(dev device.Device) []Check {
	host := device.NewHost()
	defer host.Close()
	var checks []Check
	for _, c := range Cases() {
		ch := Check{Kind: "kernel", Name: c.Name, Tolerance: RelTol}
		data := c.Bufs(rand.New(rand.NewPCG(1, uint64(len(c.Name)))))
		want, wantV, wantErr, err := runOn(host, c, data)
		if err != nil {
			ch.Problem = "host: " + err.Error()
			checks = append(checks, ch)
			continue
		}
		devData := data
		if wantErr == nil {
			devData = poisonOutputs(host, c, data, want, wantV)
		}
		ch.Problem = kernelProblem(dev, c, devData, want, wantV, wantErr, &ch.MaxErr)
		checks = append(checks, ch)
	}
	return checks
}

// poisonOutputs returns data with every buffer the case only writes filled
// with NaN, so that an element the device leaves unwritten fails the
// comparison instead of passing when its initial value happens to equal the
// host's result (a zero where the host writes a zero). A buffer is write-only
// when, on the host, filling it with NaN before the call leaves every buffer
// and the value bit for bit as they were; buffers the call reads (inputs,
// Adam's moments, an output it writes only in part) keep their contents.
func poisonOutputs(host device.Device, c Case, data, want [][]float32, wantV float64) [][]float32 {
	out := slices.Clone(data)
	for i := range data {
		trial := slices.Clone(data)
		trial[i] = nans(len(data[i]))
		got, gotV, callErr, err := runOn(host, c, trial)
		if err != nil || callErr != nil || math.Float64bits(gotV) != math.Float64bits(wantV) || !sameBits(got, want) {
			continue
		}
		out[i] = trial[i]
	}
	return out
}

func nans(n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(math.NaN())
	}
	return x
}

// sameBits reports whether a and b hold the same buffers bit for bit.
func sameBits(a, b [][]float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if math.Float32bits(a[i][j]) != math.Float32bits(b[i][j]) {
				return false
			}
		}
	}
	return true
}

func kernelProblem(dev device.Device, c Case, data, want [][]float32, wantV float64, wantErr error, maxErr *float64) string {
	var first [][]float32
	for run := range 2 {
		got, gotV, callErr, err := runOn(dev, c, data)
		if err != nil {
			return err.Error()
		}
		if fmt.Sprint(callErr) != fmt.Sprint(wantErr) {
			return fmt.Sprintf("error %v, host %v", callErr, wantErr)
		}
		if wantErr != nil {
			return ""
		}
		if e, p := compare([]float32{float32(gotV)}, []float32{float32(wantV)}, RelTol, 0); p != "" {
			return "value: " + p
		} else {
			*maxErr = max(*maxErr, e)
		}
		for i := range got {
			e, p := compare(got[i], want[i], RelTol, AbsTol)
			*maxErr = max(*maxErr, e)
			if p != "" {
				return fmt.Sprintf("buffer %d: %s", i, p)
			}
		}
		if run == 0 {
			first = got
			continue
		}
		for i := range got {
			for j := range got[i] {
				if math.Float32bits(got[i][j]) != math.Float32bits(first[i][j]) {
					return fmt.Sprintf("buffer %d element %d: %v, then %v: not deterministic", i, j, first[i][j], got[i][j])
				}
			}
		}
	}
	return ""
}

// workload is a model at the self-test's scale.
type workload struct {
	name  string
	build func() (*models.Model, models.Data, int, error) // model, data, batch
}

// config is what the models' configurations have in common.
type config interface {
	Build() (*models.Model, error)
	Data(seed uint64) models.Data
}

// small is a workload that builds the preset's small scale after shrink
// has adjusted the configuration and returned its batch.
func small[C config](name string, preset func(scale string) (C, error), shrink func(c *C) (batch int)) workload {
	return workload{name, func() (*models.Model, models.Data, int, error) {
		c, err := preset(models.ScaleSmall)
		if err != nil {
			return nil, models.Data{}, 0, err
		}
		batch := shrink(&c)
		m, err := c.Build()
		return m, c.Data(7), batch, err
	}}
}

// workloads are the three workloads at small scale, resnet's images and
// attention's sequences smaller still.
func workloads() []workload {
	return []workload{
		small("linear", models.LinearPreset, func(c *models.LinearConfig) int { return c.Batch }),
		small("resnet", models.ResnetPreset, func(c *models.ResnetConfig) int { c.ImageSize = 16; return c.Batch }),
		small("attention", models.AttentionPreset, func(c *models.AttentionConfig) int { c.SeqLen = 16; return c.Batch }),
	}
}

// steps is the number of training steps each training check runs.
const steps = 2

// trainOn runs steps training steps of a workload on dev in a placement
// and returns the losses followed by every parameter.
func trainOn(w workload, dev device.Device, pl engine.Placement) ([]float32, error) {
	model, data, batch, err := w.build()
	if err != nil {
		return nil, err
	}
	plan, err := engine.Compile(engine.Spec{Inputs: model.Inputs(), Blocks: model.Blocks, Output: model.Loss,
		Train: true, Optimizer: hostmath.DefaultAdam(), ClipNorm: 1})
	if err != nil {
		return nil, err
	}
	prog, err := plan.Load(dev, pl)
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	if err := model.InitParams(1, prog.SetInput); err != nil {
		return nil, err
	}
	var out []float32
	for i := range steps {
		b := data.Batch(i, batch)
		if err := prog.SetInput(model.Input, b); err != nil {
			return nil, err
		}
		if err := prog.SetInput(model.Target, data.TargetBatch(i, batch)); err != nil {
			return nil, err
		}
		loss, err := prog.Run()
		if err != nil {
			return nil, err
		}
		out = append(out, loss)
	}
	for _, blk := range model.Blocks {
		for _, p := range blk.Params {
			v, err := prog.Read(p)
			if err != nil {
				return nil, err
			}
			out = append(out, v...)
		}
	}
	return out, nil
}

// Training runs two training steps of each workload on the host (cpu
// mode), on dev with every block resident (cuda mode), on dev paged with
// a window of one block (cache mode) and, where dev can oversubscribe
// managed memory, on dev in managed memory of 64 KiB pages (managed mode):
// cuda must agree with the host within TrainRelTol and TrainAbsTol, and
// cache and managed must equal cuda bit for bit.
func Training(dev device.Device) []Check {
	var checks []Check
	managedPages := engine.Managed{PageSize: 64 << 10}
	managed := managedPages.Usable(dev) == nil
	for _, w := range workloads() {
		ch := Check{Kind: "training", Name: w.name + " cuda vs cpu", Tolerance: TrainRelTol}
		// others run on dev under other placements and must equal cuda.
		type placed struct {
			check Check
			place engine.Placement
		}
		others := []placed{
			{Check{Kind: "training", Name: w.name + " cache vs cuda"}, engine.Paged{Cache: cache.Config{Policy: cache.Window, Window: 1}}},
		}
		if managed {
			others = append(others, placed{Check{Kind: "training", Name: w.name + " managed vs cuda"}, managedPages})
		}
		host := device.NewHost()
		want, err := trainOn(w, host, engine.Resident{})
		_ = host.Close()
		if err != nil {
			ch.Problem = "host: " + err.Error()
			checks = append(checks, ch)
			for _, o := range others {
				o.check.Problem = ch.Problem
				checks = append(checks, o.check)
			}
			continue
		}
		got, err := trainOn(w, dev, engine.Resident{})
		if err != nil {
			ch.Problem = err.Error()
		} else {
			ch.MaxErr, ch.Problem = compare(got, want, TrainRelTol, TrainAbsTol)
		}
		checks = append(checks, ch)
		for _, o := range others {
			res, err := trainOn(w, dev, o.place)
			switch {
			case err != nil:
				o.check.Problem = err.Error()
			case got == nil:
				o.check.Problem = "no cuda result to compare with"
			default:
				o.check.Problem = identical(res, got)
			}
			checks = append(checks, o.check)
		}
	}
	return checks
}

// identical describes the first difference between a and b, or returns "".
func identical(a, b []float32) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d values, cuda %d", len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return fmt.Sprintf("value %d = %v, cuda %v: not bit-identical", i, a[i], b[i])
		}
	}
	return ""
}

// ErrFailed is returned by callers when a self-test has failing checks.
var ErrFailed = errors.New("self-test failed")
