package report

import (
	"testing"
	"time"
)

func TestSeconds(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
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
	}
	for _, tt := range tests {
		if got := Seconds(tt.in); got != tt.want {
			t.Errorf("Seconds(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCount(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0"},
		{999, "999"},
		{1000, "1.00k"},
		{12_345, "12.3k"},
		{999_600, "1.00M"},
		{480_240_000, "480M"},
		{7_000_000_000, "7.00B"},
		{1_500_000_000_000, "1.50T"},
		{-2500, "-2.50k"},
	}
	for _, tt := range tests {
		if got := count(tt.in); got != tt.want {
			t.Errorf("count(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
