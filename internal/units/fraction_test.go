package units

import (
	"strings"
	"testing"
)

// TestParseBytesWholeBytes: a size that is not a whole number of bytes is
// refused with one line saying so (1.5B was rounded to 2 B, and 0.1B to
// 0, which take-mem called "must be positive"); a fraction of a unit that
// is less than a byte is refused too; a fraction of a larger unit is
// rounded to the nearest byte.
func TestParseBytesWholeBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64  // when err is ""
		err  string // a part of the error
	}{
		{"1.5B", 0, `invalid byte size "1.5B": not a whole number of bytes`},
		{"0.1B", 0, "not a whole number of bytes"},
		{"0.5", 0, "not a whole number of bytes"},
		{"1.000001 b", 0, "not a whole number of bytes"},
		{"0.0001KB", 0, "less than one byte"},
		{"0.0000000001GiB", 0, "less than one byte"},
		{"0.0B", 0, ""},
		{"1.0001KB", 1000, ""},
		{"0.3GiB", 322122547, ""},
		{"1.5KiB", 1536, ""},
		{"2.0B", 2, ""},
		{"1.B", 1, ""},
		{".5KB", 500, ""},
		{"1.1GB", 1_100_000_000, ""},
		{"0.000001MB", 1, ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseBytes(tc.in)
			switch {
			case tc.err == "" && (err != nil || got != tc.want):
				t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n")):
				t.Errorf("ParseBytes(%q) = %d, %v; want one line with %q", tc.in, got, err, tc.err)
			}
		})
	}
}
