package bench

import (
	"slices"
	"testing"
	"time"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/perfmodel"
	"gpuz/internal/results"
)

// compilingSim is a simulated GPU whose caps say it compiled its kernels
// as it opened (device.Caps.Compile), as a CUDA GPU's do: compile is the
// part of its opening that newCompilingSim timed as the compile.
type compilingSim struct {
	*device.Sim
	compile device.KernelCompile
}

func (s compilingSim) Caps() device.Caps {
	c := s.Sim.Caps()
	c.Compile = &s.compile
	return c
}

// newCompilingSim opens a compilingSim whose "compile" is the making of
// its simulated device, within its opening as a real compile is.
func newCompilingSim(cached bool) func() (device.Device, error) {
	return func() (device.Device, error) {
		start := time.Now()
		sim := device.NewSim(64<<20, nil)
		return compilingSim{sim, device.KernelCompile{Duration: time.Since(start), Cached: cached}}, nil
	}
}

// TestSetupPhases runs modes on the host, the simulated GPU and a device
// that compiles its kernels, and checks each mode's setup phases: the
// names in the order they ran, the phases a mode that stopped completed,
// none for a mode without a device, and no negative duration; the run's
// own setup; and the time from the process's start to the first epoch,
// which holds the run's setup and that of every mode up to it.
func TestSetupPhases(t *testing.T) {
	host, err := perfmodel.LookupHost("cpu-i7-13700h")
	if err != nil {
		t.Fatal(err)
	}
	// The model is built and compiled once, in the run's own setup: no
	// mode builds.
	common := []PhaseName{PhaseLoad, PhaseInit, PhaseUpload}
	onHost := append([]PhaseName{PhaseOpen}, common...)
	onSim := []PhaseName{PhaseOpen, PhaseReserve, PhaseLoad, PhaseInit, PhaseUpload}
	tests := []struct {
		name  string
		modes []Mode
		gpu   func() (device.Device, error)
		host  *perfmodel.Profile
		want  [][]PhaseName // per mode
		// noStart runs without a process start: no StartToFirstEpoch.
		noStart bool
		// noPolicy runs cache mode without a policy, which fails its load.
		noPolicy bool
	}{
		{name: "sim and cpu", modes: []Mode{ModeCUDA, ModeCPU}, want: [][]PhaseName{onSim, onHost}},
		{name: "cache on sim", modes: []Mode{ModeCache}, want: [][]PhaseName{onSim}},
		{name: "cpu predicted", modes: []Mode{ModeCPU}, host: &host, want: [][]PhaseName{append(slices.Clone(onHost), PhasePredict)}},
		{name: "kernels compiled", modes: []Mode{ModeCUDA}, gpu: newCompilingSim(false),
			want: [][]PhaseName{append([]PhaseName{PhaseCompile}, onSim...)}},
		{name: "kernels cached", modes: []Mode{ModeCUDA}, gpu: newCompilingSim(true),
			want: [][]PhaseName{append([]PhaseName{PhaseKernelCache}, onSim...)}},
		// The footprint's reservation fails: the phases before it stay.
		{name: "OOM then cpu", modes: []Mode{ModeCUDA, ModeCPU}, gpu: func() (device.Device, error) { return device.NewSim(1<<10, nil), nil },
			want: [][]PhaseName{{PhaseOpen}, onHost}},
		{name: "unavailable then cpu", modes: []Mode{ModeCUDA, ModeCPU}, gpu: func() (device.Device, error) { return nil, errNoGPU },
			want: [][]PhaseName{nil, onHost}},
		{name: "load fails then cpu", modes: []Mode{ModeCache, ModeCPU}, noPolicy: true,
			want: [][]PhaseName{{PhaseOpen, PhaseReserve}, onHost}},
		{name: "no process start", modes: []Mode{ModeCPU}, want: [][]PhaseName{onHost}, noStart: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := smallLinearRun(t, TaskTrain, tt.modes...)
			opts.Epochs, opts.Warmup, opts.HostProfile = 2, 1, tt.host
			if !tt.noPolicy {
				opts.Cache = cache.Config{Policy: cache.Window, Window: 1}
			}
			if tt.gpu != nil {
				opts.NewGPU = tt.gpu
			}
			if !tt.noStart {
				opts.ProcessStart = time.Now()
			}
			res := run(t, opts)
			h := res.Header
			if got := phaseNames(h.Setup); !slices.Equal(got, []PhaseName{PhaseBuild, PhaseData}) {
				t.Errorf("run's setup %v, want [build data]", got)
			}
			checkDurations(t, "run", h.Setup)
			before := SetupTime(h.Setup) // the setup before the first epoch
			first := -1                  // the first mode that ran an epoch
			for i, m := range res.Modes {
				if got := phaseNames(m.Setup); !slices.Equal(got, tt.want[i]) {
					t.Errorf("%s (%s) setup %v, want %v", m.Mode, m.Status, got, tt.want[i])
				}
				checkDurations(t, string(m.Mode), m.Setup)
				if first < 0 {
					before += SetupTime(m.Setup)
					if len(m.Epochs) > 0 {
						first = i
					}
				}
			}
			if first < 0 {
				t.Fatal("no mode ran an epoch")
			}
			switch {
			case tt.noStart && h.StartToFirstEpoch != 0:
				t.Errorf("StartToFirstEpoch %v without a process start, want 0", h.StartToFirstEpoch)
			case !tt.noStart && results.Duration(h.StartToFirstEpoch) < before:
				t.Errorf("StartToFirstEpoch %v, less than the setup before it, %v", h.StartToFirstEpoch, before)
			}
		})
	}
}

// errNoGPU is a GPU factory's failure.
var errNoGPU = errorString("no GPU here")

type errorString string

func (e errorString) Error() string { return string(e) }

// phaseNames returns the phases' names, in order; nil for none.
func phaseNames(phases []Phase) []PhaseName {
	var names []PhaseName
	for _, p := range phases {
		names = append(names, PhaseName(p.Name))
	}
	return names
}

// checkDurations fails the test for a phase with a negative duration.
func checkDurations(t *testing.T, what string, phases []Phase) {
	t.Helper()
	for _, p := range phases {
		if p.Seconds < 0 {
			t.Errorf("%s: phase %s took %v", what, p.Name, p.Duration())
		}
	}
}

// TestSweepStartToFirstEpoch: a sweep's first configuration counts the
// time from the process's start to its first epoch; the later ones, whose
// count would hold the earlier runs, have none.
func TestSweepStartToFirstEpoch(t *testing.T) {
	so := SweepOptions{Parameters: []string{"seed"}}
	start := time.Now()
	for i := range 2 {
		opts := smallLinearRun(t, TaskEval, ModeCPU)
		opts.Epochs, opts.Warmup, opts.Seed, opts.ProcessStart = 1, 0, uint64(i), start
		so.Configs = append(so.Configs, SweepConfig{Options: opts})
	}
	res, err := Sweep(t.Context(), so)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || res.Rows[0].Result.Header.StartToFirstEpoch <= 0 || res.Rows[1].Result.Header.StartToFirstEpoch != 0 {
		var got []float64
		for _, r := range res.Rows {
			got = append(got, r.Result.Header.StartToFirstEpoch)
		}
		t.Errorf("StartToFirstEpoch per configuration %v, want the first's only", got)
	}
}
