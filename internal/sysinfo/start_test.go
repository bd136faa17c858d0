package sysinfo

import (
	"runtime"
	"testing"
	"time"
)

// TestProcessStart computes a start from /proc's lines: the start time is
// the 22nd field, counted past a command name that holds spaces and
// parentheses, in ticks of 1/100 s since boot.
func TestProcessStart(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	// 19 fields after the name, then starttime 12345 (123.45 s after boot).
	stat := func(name, start string) string {
		return "4242 (" + name + ") S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 4 0 " + start + " 1000 200 rest"
	}
	for _, c := range []struct {
		name, stat, uptime string
		want               time.Time
		err                bool
	}{
		{name: "plain", stat: stat("gpuz", "12345"), uptime: "125.95 300.00\n", want: now.Add(-2500 * time.Millisecond)},
		{name: "name with spaces and parentheses", stat: stat("a) b (c", "12345"), uptime: "123.45 1.0", want: now},
		{name: "started within the last tick", stat: stat("gpuz", "12346"), uptime: "123.45", want: now},
		{name: "no name", stat: "4242 gpuz S 1", uptime: "1.0", err: true},
		{name: "too few fields", stat: "4242 (gpuz) S 1 2 3", uptime: "1.0", err: true},
		{name: "start not a number", stat: stat("gpuz", "soon"), uptime: "1.0", err: true},
		{name: "empty uptime", stat: stat("gpuz", "1"), uptime: "", err: true},
		{name: "uptime not a number", stat: stat("gpuz", "1"), uptime: "long ago", err: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := processStart(c.stat, c.uptime, now)
			if c.err {
				if err == nil {
					t.Fatalf("processStart = %v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(c.want) {
				t.Errorf("processStart = %v, want %v (%v before now)", got, c.want, now.Sub(got))
			}
		})
	}
}

// TestProcessStartHere reads this test process's start from /proc on
// Linux: a time before now.
func TestProcessStartHere(t *testing.T) {
	start, ok := ProcessStart()
	if runtime.GOOS != "linux" {
		t.Skip("no /proc/self/stat on " + runtime.GOOS)
	}
	if !ok {
		t.Fatal("ProcessStart found no start on Linux")
	}
	if now := time.Now(); start.After(now) {
		t.Errorf("ProcessStart = %v, after now %v", start, now)
	}
}
