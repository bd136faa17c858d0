package bench

import (
	"fmt"
	"testing"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/models"
)

// TestFusedAVX2IsBitIdenticalAcrossModes trains and evaluates the
// workloads with fused attention (the attention workload with --attention
// fused, the llm's tiny configurations, fused by default) on the AVX2
// kernels of the fused attention, forced on a CPU with AVX-512, in every
// placement and on the host: every mode runs the same kernels on the same
// inputs, so the losses and the final weights must be the resident run's
// bit for bit. Without AVX2 the test has nothing to check.
func TestFusedAVX2IsBitIdenticalAcrossModes(t *testing.T) {
	previous, err := hostmath.SetFusedAttentionVector("AVX2")
	if err != nil {
		t.Skip(err)
	}
	defer hostmath.SetFusedAttentionVector(previous)
	workloads := smallWorkloads(t)
	attention, err := models.AttentionPreset(models.ScaleSmall)
	if err != nil {
		t.Fatal(err)
	}
	attention.Attention = levers.AttentionFused
	fused := Options{ModelName: "attention", Workload: &attention, Samples: attention.Samples, Batch: attention.Batch}
	for name, opts := range map[string]Options{"attention-fused": fused, "llm-llama": workloads["llm-llama"], "llm-gpt2": workloads["llm-gpt2"]} {
		placements := leverPlacements(t, opts)
		for _, task := range []Task{TaskTrain, TaskEval} {
			want := trainOnDevice(t, opts, task, placements["cuda"], 3, device.NewSim(64<<20, nil))
			for pname, pl := range placements {
				t.Run(fmt.Sprintf("%s/%s/%s", name, task, pname), func(t *testing.T) {
					dev := device.Device(device.NewSim(64<<20, nil))
					if pname == "cpu" {
						dev = device.NewHost()
					}
					got := trainOnDevice(t, opts, task, pl, 3, dev)
					got.checkSame(t, want, "resident", "the resident run's")
				})
			}
		}
	}
}
