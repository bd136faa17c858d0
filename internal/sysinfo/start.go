package sysinfo

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the times in /proc/PID/stat: clock ticks of
// 1/100 s, USER_HZ, which Linux fixes for /proc on every architecture Go
// runs on.
const userHZ = 100

// ProcessStart returns when this process started, as the kernel counts it:
// its start time in /proc/self/stat (ticks since boot) against the time
// since boot in /proc/uptime, both to 1/100 s. That is before the dynamic
// loader, the Go runtime and any re-execution of the program (exec keeps
// the process and its start time). false where those files do not say
// (not Linux, no /proc): the caller then counts from its own start.
func ProcessStart() (time.Time, bool) {
	now := time.Now()
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return time.Time{}, false
	}
	uptime, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return time.Time{}, false
	}
	start, err := processStart(string(stat), string(uptime), now)
	if err != nil {
		return time.Time{}, false
	}
	return start, true
}

// processStart computes a process's start from its /proc/PID/stat line,
// the /proc/uptime line read at now, and now.
func processStart(stat, uptime string, now time.Time) (time.Time, error) {
	// The command's name, field 2, is in parentheses and may hold spaces
	// and parentheses: the fields after it follow the last ')'.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return time.Time{}, fmt.Errorf("stat: no command name in %q", stat)
	}
	fields := strings.Fields(stat[i+1:])
	const startField = 22 - 3 // field 22, starttime, counted from field 3 (state)
	if len(fields) <= startField {
		return time.Time{}, fmt.Errorf("stat: %d fields after the command name, want at least %d", len(fields), startField+1)
	}
	ticks, err := strconv.ParseInt(fields[startField], 10, 64)
	if err != nil || ticks < 0 {
		return time.Time{}, fmt.Errorf("stat: start time %q", fields[startField])
	}
	up := strings.Fields(uptime)
	if len(up) == 0 {
		return time.Time{}, fmt.Errorf("uptime: empty")
	}
	secs, err := strconv.ParseFloat(up[0], 64)
	if err != nil || secs < 0 {
		return time.Time{}, fmt.Errorf("uptime: %q", up[0])
	}
	age := time.Duration(secs*float64(time.Second)) - time.Duration(ticks)*time.Second/userHZ
	if age < 0 {
		// Both are to 1/100 s: a process started within the last tick can
		// read a start after the uptime.
		age = 0
	}
	return now.Add(-age), nil
}
