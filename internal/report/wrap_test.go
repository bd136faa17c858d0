package report

import (
	"strings"
	"testing"
)

// TestWrapKeepsValuesWhole wraps notes whose break would fall between a
// number and its unit (issue 36 item 21: a sweep's note ended a line with
// "192" and began the next with "MiB"): the value moves to the next line
// whole; a unit with punctuation after it, a rate and a time count as
// units; a word that is not a unit, or a unit after a word that is not a
// number, breaks as before.
func TestWrapKeepsValuesWhole(t *testing.T) {
	for _, tt := range []struct {
		name  string
		s     string
		limit int
		want  []string
	}{
		{"the sweep's note", "[3] take=192MiB cache: OOM: needs 113 MiB, 64.0 MiB of 256 MiB free; held by pid 9885 (root): 192 MiB", 99,
			[]string{"[3] take=192MiB cache: OOM: needs 113 MiB, 64.0 MiB of 256 MiB free; held by pid 9885 (root):", "    192 MiB"}},
		{"unit with a comma", "aaaa 12 MiB, b", 7, []string{"aaaa", "    12 MiB,", "    b"}},
		{"a rate", "copied at 3.5 GiB/s", 13, []string{"copied at", "    3.5 GiB/s"}},
		{"a time", "took 12.5 ms", 9, []string{"took", "    12.5 ms"}},
		{"not a unit", "take 12 blocks", 7, []string{"take 12", "    blocks"}},
		{"no number before", "the MiB unit", 7, []string{"the MiB", "    unit"}},
		{"fits", "needs 12 MiB", 80, []string{"needs 12 MiB"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := wrap(tt.s, tt.limit); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("wrap(%q, %d):\n%s\nwant:\n%s", tt.s, tt.limit, strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
