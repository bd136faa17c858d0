package main

import (
	"encoding/json"
	"os/exec"
	"testing"
)

// TestPlanHostMemory plans for a target host's memory (--host-memory): the
// plan's available host memory is that size, a simulated GPU's bytes are
// the card's and not the host's, the cpu mode's device is the target
// host, and the header says where the figure comes from (issue 44 item
// 10).
func TestPlanHostMemory(t *testing.T) {
	plan := func(args ...string) (header map[string]any, modes []map[string]any) {
		t.Helper()
		base := []string{"plan", "llm", "eval", "cuda,cpu", "--model", "smollm2-135m", "--layers", "2", "--seq-len", "64", "--device", "sim:1GiB", "--format", "json"}
		b, err := exec.Command(gpuzBinary, append(base, args...)...).Output()
		if err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		var p struct {
			Header map[string]any   `json:"header"`
			Modes  []map[string]any `json:"modes"`
		}
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		return p.Header, p.Modes
	}
	const target = 3 << 30
	h, target3 := plan("--host-memory", "3GiB")
	_, here := plan()
	if h["host_memory"] != float64(target) || h["host_memory_source"] != "--host-memory" {
		t.Errorf("header: host_memory %v from %v, want %d from --host-memory", h["host_memory"], h["host_memory_source"], target)
	}
	cudaT, cudaHere, cpuT := target3[0], here[0], target3[1]
	if cudaT["host_available"] != float64(target) || cpuT["device_free"] != float64(target) {
		t.Errorf("host available %v, cpu device free %v; want the target's %d", cudaT["host_available"], cpuT["device_free"], target)
	}
	// On sim the device's bytes are this machine's host memory, but the
	// target host's card holds them itself.
	if d := cudaHere["host_bytes"].(float64) - cudaT["host_bytes"].(float64); d != cudaT["device_bytes"].(float64) {
		t.Errorf("cuda's host need %v here, %v for the target: want the device's %v apart", cudaHere["host_bytes"], cudaT["host_bytes"], cudaT["device_bytes"])
	}
	if cpuT["host_bytes"].(float64) < cpuT["device_bytes"].(float64) {
		t.Errorf("cpu's host need %v below its footprint %v: the host is its device", cpuT["host_bytes"], cpuT["device_bytes"])
	}
}
