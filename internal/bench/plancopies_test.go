package bench

import "testing"

// TestPlanCopiesOnlyAcrossTheBus plans the small linear workload, training
// and evaluating, in the cuda, cache and cpu modes: the cpu row counts no
// copies (the host never copies between devices: docs/output.md's copied
// column is "-" for it), while the cuda row does (the batches' uploads),
// so that a zero is not the planner counting nothing.
func TestPlanCopiesOnlyAcrossTheBus(t *testing.T) {
	for _, task := range []Task{TaskTrain, TaskEval} {
		p, err := PlanMemory(smallLinearRun(t, task, ModeCUDA, ModeCache, ModeCPU), PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[Mode]bool{}
		for _, m := range p.Modes {
			seen[m.Mode] = true
			c := m.Copies
			switch {
			case !m.Mode.Copies() && (c.UploadBytes != 0 || c.DownloadBytes != 0 || c.Count != 0 || c.OverlapBytes != 0 || c.RemoteBytes != 0):
				t.Errorf("%s: %s row counts copies %+v, want none", task, m.Mode, c)
			case m.Mode == ModeCUDA && (c.UploadBytes == 0 || c.Count == 0):
				t.Errorf("%s: %s row counts copies %+v, want the batches' uploads at least", task, m.Mode, c)
			}
		}
		for _, want := range []Mode{ModeCUDA, ModeCache, ModeCPU} {
			if !seen[want] {
				t.Errorf("%s: no %s row in the plan", task, want)
			}
		}
	}
}
