//go:build !gpuzcuda

package selftest

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gpuz/internal/device"
	"gpuz/internal/device/gpu"
	"gpuz/internal/hostmath"
)

// TestShimDevicePasses runs the whole self-test on the CUDA kernels as the
// CPU shim runs them, in the shuffled schedule: every kernel and the
// training steps of the three workloads, resident and paged, through the
// engine, as `gpuz selftest --device cuda` runs them on a GPU.
func TestShimDevicePasses(t *testing.T) {
	if testing.Short() {
		t.Skip("the shim runs every GPU thread as a fiber: about a minute")
	}
	dev := gpu.NewShimDevice(gpu.Shuffled, 1<<30, gpu.DefaultShimWorkspace)
	defer dev.Close()
	r := Run(dev)
	for _, c := range r.Checks {
		if !c.Passed() {
			t.Errorf("%s %s: %s (largest error %.2g, tolerance %.2g)", c.Kind, c.Name, c.Problem, c.MaxErr, c.Tolerance)
		} else {
			t.Logf("%s %s: largest error %.2g (tolerance %.2g)", c.Kind, c.Name, c.MaxErr, c.Tolerance)
		}
	}
	if len(r.Checks) < len(Cases())+9 {
		t.Errorf("%d checks, want %d kernel and 9 training checks", len(r.Checks), len(Cases()))
	}
}

// TestSimPasses runs the self-test on the simulated device, whose kernels
// are the host's: every check must pass with zero error.
func TestSimPasses(t *testing.T) {
	r := Run(device.NewSim(1<<30, nil))
	for _, c := range r.Checks {
		if !c.Passed() || c.MaxErr != 0 {
			t.Errorf("%s %s: %q, largest error %g", c.Kind, c.Name, c.Problem, c.MaxErr)
		}
	}
}

// TestCompareCatchesDifferences checks that compare fails beyond the
// tolerance and on NaN.
func TestCompareCatchesDifferences(t *testing.T) {
	for _, c := range []struct {
		got, want []float32
		fail      bool
	}{
		{[]float32{1, 2}, []float32{1, 2}, false},
		{[]float32{1.00001, 2}, []float32{1, 2}, false},
		{[]float32{1.01, 2}, []float32{1, 2}, true},
		{[]float32{float32(nan()), 2}, []float32{1, 2}, true},
		{[]float32{1}, []float32{1, 2}, true},
	} {
		if _, p := compare(c.got, c.want, RelTol, AbsTol); (p != "") != c.fail {
			t.Errorf("compare(%v, %v): problem %q, want failure %v", c.got, c.want, p, c.fail)
		}
	}
}

func nan() float64 { var z float64; return z / z }

// partialKernels are the host kernels with two faults a device kernel can
// have: Add leaves dst's last element alone, and AttentionProbs leaves the
// entries a causal mask hides alone (where the host writes zeros).
type partialKernels struct{ device.Kernels }

func (k partialKernels) Add(dst, a, b device.Buffer) {
	d := device.Floats(dst)
	last := d[len(d)-1]
	k.Kernels.Add(dst, a, b)
	d[len(d)-1] = last
}

func (k partialKernels) AttentionProbs(p, qkv device.Buffer, a hostmath.Attention) {
	d := device.Floats(p)
	before := slices.Clone(d)
	k.Kernels.AttentionProbs(p, qkv, a)
	if !a.Causal {
		return
	}
	for i := range d {
		if row, col := i/a.Seq%a.Seq, i%a.Seq; col > row {
			d[i] = before[i]
		}
	}
}

// partialDevice is a simulated device whose kernels are partialKernels.
type partialDevice struct{ *device.Sim }

func (d partialDevice) Kernels() device.Kernels { return partialKernels{d.Sim.Kernels()} }

// TestKernelsCatchUnwrittenOutputs runs the kernel checks on a device
// whose Add skips dst's last element and whose causal AttentionProbs skips
// the masked entries: those checks (the causal attention's, grouped or
// not) must fail and every other pass. The
// masked entries are zeros on the host, so only the NaN the outputs are
// filled with on the device under test makes that fault show.
func TestKernelsCatchUnwrittenOutputs(t *testing.T) {
	dev := partialDevice{device.NewSim(1<<30, nil)}
	defer dev.Close()
	want := map[string]bool{"Add": true, "AttentionProbs/causal=true": true,
		"AttentionProbs/kvheads=2/6/causal=true": true, "AttentionProbs/kvheads=6/6/causal=true": true}
	for _, c := range Kernels(dev) {
		if failed := !c.Passed(); failed != want[c.Name] {
			t.Errorf("%s: failed %v (%q), want %v", c.Name, failed, c.Problem, want[c.Name])
		}
	}
}

// TestPoisonOutputsFillsOnlyWriteOnlyBuffers checks which buffers the
// self-test fills with NaN: Add's destination but not its operands, and
// none of AdamStep's, which reads every buffer it writes.
func TestPoisonOutputsFillsOnlyWriteOnlyBuffers(t *testing.T) {
	host := device.NewHost()
	for _, tc := range []struct {
		name string
		want []bool
	}{
		{"Add", []bool{true, false, false}},
		{"AdamStep", []bool{false, false, false, false}},
		{"SumSquares", []bool{false}},
	} {
		i := slices.IndexFunc(Cases(), func(c Case) bool { return c.Name == tc.name })
		if i < 0 {
			t.Fatalf("no case %s", tc.name)
		}
		c := Cases()[i]
		data := c.Bufs(rand.New(rand.NewPCG(1, 2)))
		want, wantV, _, err := runOn(host, c, data)
		if err != nil {
			t.Fatal(err)
		}
		got := poisonOutputs(host, c, data, want, wantV)
		for j := range got {
			if poisoned := math.IsNaN(float64(got[j][0])); poisoned != tc.want[j] {
				t.Errorf("%s buffer %d: filled with NaN %v, want %v", tc.name, j, poisoned, tc.want[j])
			}
		}
	}
}
