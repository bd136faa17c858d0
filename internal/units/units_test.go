package units

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pair is an input and the output wanted for it.
type pair[In, Out any] struct {
	in   In
	want Out
}

// checkPairs calls f, named name, on every pair's input and compares the
// result with the pair's output.
func checkPairs[In any, Out comparable](t *testing.T, name string, f func(In) Out, tests []pair[In, Out]) {
	t.Helper()
	for _, tt := range tests {
		if got := f(tt.in); got != tt.want {
			t.Errorf("%s(%v) = %#v, want %#v", name, tt.in, got, tt.want)
		}
	}
}

func TestBytes(t *testing.T) {
	checkPairs(t, "Bytes", Bytes, []pair[int64, string]{
		{0, "0 B"},
		{1, "1 B"},
		{512, "512 B"},
		{1023, "1023 B"},
		{1024, "1.00 KiB"},
		{1536, "1.50 KiB"},
		{10_235, "10.0 KiB"}, // 9.995 KiB rounds up into a new digit
		{480_000, "469 KiB"},
		{1_048_064, "1.00 MiB"}, // 1023.5 KiB would read "1024 KiB"
		{240 << 20, "240 MiB"},
		{7_795_000_000, "7.26 GiB"},
		{1_920_960_000, "1.79 GiB"},
		{3 << 40, "3.00 TiB"},
		{math.MaxInt64, "8.00 EiB"},
		{-1536, "-1.50 KiB"},
		{math.MinInt64, "-8.00 EiB"},
	})
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"512", 512},
		{"512B", 512},
		{"512b", 512},
		{"512MiB", 512 << 20},
		{"512mib", 512 << 20},
		{"4GiB", 4 << 30},
		{"4GIB", 4 << 30},
		{"4 GiB", 4 << 30},
		{"  4GiB\n", 4 << 30},
		{"4GB", 4_000_000_000},
		{"4gb", 4_000_000_000},
		{"3KB", 3000},
		{"3kB", 3000},
		{"3MB", 3_000_000},
		{"2TB", 2_000_000_000_000},
		{"2KiB", 2048},
		{"2TiB", 2 << 40},
		{"1.5GiB", 3 << 29},
		{"1.50 KiB", 1536}, // what Bytes writes reads back
		{"1.1KiB", 1126},   // 1126.4 rounds to the nearest byte
		{".5KiB", 512},
		{"1.", 1},
		{"9223372036854775807", math.MaxInt64},
		{"8388607TiB", math.MaxInt64 - (1<<40 - 1)},
	}
	for _, tt := range tests {
		got, err := ParseBytes(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, nil", tt.in, got, err, tt.want)
		}
	}
}

func TestParseBytesErrors(t *testing.T) {
	tests := []struct {
		in, why string
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"-1", "negative"},
		{"-4GiB", "negative"},
		{"GiB", "no number"},
		{"+5", "no number"},
		{"8g", `unknown unit "g"`},
		{"8G", `unknown unit "G"`},
		{"4 GiBs", `unknown unit "GiBs"`},
		{"4EiB", `unknown unit "EiB"`},
		{"1e9", `unknown unit "e9"`},
		{"1_000", `unknown unit "_000"`},
		{"1.2.3MB", `bad number "1.2.3"`},
		{".", `bad number "."`},
		{"9223372036854775808", "too large"},
		{"99999999999999999999", "too large"},
		{"8388608TiB", "too large"},
		{"10000000TB", "too large"},
		{"9223372036854775807.0", "too large"},
		{"8388608.0TiB", "too large"},
	}
	for _, tt := range tests {
		got, err := ParseBytes(tt.in)
		if err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", tt.in, got)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, strconv.Quote(tt.in)) || !strings.Contains(msg, tt.why) {
			t.Errorf("ParseBytes(%q) error %q should quote the input and say %q", tt.in, msg, tt.why)
		}
	}
}

func TestExactBytes(t *testing.T) {
	tests := []pair[int64, string]{
		{0, "0B"},
		{1, "1B"},
		{1000, "1KB"},
		{1024, "1KiB"},
		{1500, "1500B"},
		{8 << 30, "8GiB"},
		{512 << 20, "512MiB"},
		{3 << 29, "1536MiB"},
		{4_000_000_000, "4GB"},
		{2 << 40, "2TiB"},
		{2_000_000_000_000, "2TB"},
		{3_000_000, "3MB"},
		{160_080_000, "160080KB"},
		// Divisible by both 1000 and 1024 but not by 1 MiB: the larger
		// unit that divides wins, KiB over KB, MB over KiB.
		{1_024_000, "1000KiB"},
		{512_000, "500KiB"},
		{3_072_000, "3000KiB"},
		{2_048_000_000, "2048MB"},
		{1_536_000_000, "1536MB"},
		{-5, "-5B"},
	}
	checkPairs(t, "ExactBytes", ExactBytes, tests)
	for _, tt := range tests {
		if tt.in < 0 {
			continue
		}
		if back, err := ParseBytes(tt.want); err != nil || back != tt.in {
			t.Errorf("ParseBytes(ExactBytes(%d)) = %d, %v; want it back", tt.in, back, err)
		}
	}
}

func TestSig3(t *testing.T) {
	checkPairs(t, "Sig3", Sig3, []pair[float64, string]{
		{0, "0"},
		{4.35, "4.35"},
		{0.617, "0.617"},
		{12.64, "12.6"},
		{9.996, "10.0"}, // rounding carries into a new digit
		{1234.6, "1235"},
		{-1.5, "-1.50"},
		{math.Inf(1), "+Inf"},
	})
}

func TestSeconds(t *testing.T) {
	checkPairs(t, "Seconds", Seconds, []pair[time.Duration, string]{
		{0, "0 s"},
		{4350 * time.Millisecond, "4.35 s"},
		{617 * time.Millisecond, "0.617 s"},
		{1560 * time.Microsecond, "0.00156 s"},
		{12_640 * time.Millisecond, "12.6 s"},
		{124_400 * time.Millisecond, "124 s"},
		{2 * time.Second, "2.00 s"},
		{9996 * time.Millisecond, "10.0 s"},  // rounding carries into a new digit
		{99_960 * time.Millisecond, "100 s"}, // likewise
		{1_234_600 * time.Millisecond, "1235 s"},
		{time.Nanosecond, "0.00000000100 s"},
		{-1500 * time.Millisecond, "-1.50 s"},
	})
}

func TestCount(t *testing.T) {
	checkPairs(t, "Count", Count, []pair[int64, string]{
		{0, "0"},
		{999, "999"},
		{1000, "1.00k"},
		{12_345, "12.3k"},
		{999_600, "1.00M"},
		{480_240_000, "480M"},
		{7_000_000_000, "7.00B"},
		{1_500_000_000_000, "1.50T"},
		{-2500, "-2.50k"},
	})
}
