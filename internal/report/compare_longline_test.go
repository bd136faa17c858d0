package report

import (
	"strings"
	"testing"
)

// TestParseRunFileLongLine: a benchmark file with a line too long for the
// reader (64 KiB and more) is refused naming the file, the line and that it
// is too long, not as bufio's "token too long" at line 0; a line just
// under the limit is read.
func TestParseRunFileLongLine(t *testing.T) {
	ok := "BenchmarkA 1 2 sec/op\n"
	for _, tc := range []struct {
		name, data, want string // want "": no error
	}{
		{"first line", strings.Repeat("x", 70000) + "\n" + ok, "f.txt:1: line too long"},
		{"third line", ok + "goos: linux\n" + "BenchmarkB 1 2 sec/op " + strings.Repeat("y", 1<<20) + "\n", "f.txt:3: line too long"},
		{"last line without newline", ok + strings.Repeat("z", maxBenchLine+1), "f.txt:2: line too long"},
		{"just under", ok + "# " + strings.Repeat("n", maxBenchLine-2) + "\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRunFile("f.txt", []byte(tc.data))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "token")):
				t.Errorf("error %v, want one starting %q", err, tc.want)
			}
		})
	}
}
