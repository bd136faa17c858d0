package plot

import (
	"io"
	"path/filepath"
	"testing"

	"gpuz/internal/results"
)

// TestSweepCPUBand: a sweep's cpu mode is a band made of the timed epochs
// of the rows where it has some: none at all makes no band (and the
// chart's lines stand alone), and a first row without any does not put the
// band in the legend ahead of the lines' or make its interval of nothing.
// take_sweep.json's cpu has 6 timed epochs in each of its 4 rows.
func TestSweepCPUBand(t *testing.T) {
	for _, tc := range []struct {
		name    string
		untimed func(row int) bool // the rows whose cpu has no timed epoch
		bands   int
		epochs  int // the band's timed epochs
	}{
		{"every row timed", func(int) bool { return false }, 1, 24},
		{"the first row untimed", func(row int) bool { return row == 0 }, 1, 18},
		{"no row timed", func(int) bool { return true }, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := ReadFile(filepath.Join("testdata", "take_sweep.json"))
			if err != nil {
				t.Fatal(err)
			}
			var want []float64
			for i := range doc.Rows {
				for j := range doc.Rows[i].Result.Modes {
					m := &doc.Rows[i].Result.Modes[j]
					if m.Mode != "cpu" {
						continue
					}
					if tc.untimed(i) {
						var warm []results.Epoch
						for _, e := range m.Epochs {
							if e.Warmup {
								warm = append(warm, e)
							}
						}
						m.Epochs = warm
					}
					want = append(want, timedSeconds(*m)...)
				}
			}
			c, err := Build(doc)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Bands) != tc.bands || len(want) != tc.epochs {
				t.Fatalf("%d bands from %d timed epochs, want %d from %d", len(c.Bands), len(want), tc.bands, tc.epochs)
			}
			if tc.bands > 0 {
				if c.Bands[0].Label != "cpu" || !c.Bands[0].HasCI() {
					t.Errorf("band %+v, want cpu with an interval", c.Bands[0])
				}
				wantInterval(t, "cpu band", c.Bands[0].Interval, want)
			}
			if err := Render(io.Discard, c, FormatSVG); err != nil {
				t.Errorf("rendering: %v", err)
			}
		})
	}
}
