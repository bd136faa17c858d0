package hostmath

import "syscall"

// cpuClock measures the CPU time this process spends from startCPU on,
// user and system, over all its threads: on a machine shared with other
// work, a rate per CPU second says more about a kernel than one per
// wall-clock second.
type cpuClock struct{ start float64 }

func startCPU() cpuClock { return cpuClock{processCPU()} }

func (c cpuClock) seconds() float64 { return processCPU() - c.start }

func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
