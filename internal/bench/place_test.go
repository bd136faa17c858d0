package bench

import (
	"slices"
	"strings"
	"testing"

	"gpuz/internal/cache"
	"gpuz/internal/engine"
)

// TestParsePlace reads placements and names the gap or overlap of a bad one.
func TestParsePlace(t *testing.T) {
	got, err := ParsePlace("host:0, cuda:1-2,host:3", 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.Where{engine.OnHost, engine.OnDevice, engine.OnDevice, engine.OnHost}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if s := engine.PlaceText(got); s != "host:0,cuda:1-2,host:3" {
		t.Errorf("PlaceText %q", s)
	}
	got, err = ParsePlace("host:0,cuda:1,cache:2-3", 4)
	if err != nil || !slices.Equal(got, []engine.Where{engine.OnHost, engine.OnDevice, engine.InCache, engine.InCache}) {
		t.Errorf("with cache blocks: %v, %v", got, err)
	}
	pl := hybridRow(t).place(Placements{Place: got, Cache: cache.Config{Policy: cache.Window, Window: 1}})
	if c, paged := pl.Paging(); !paged || c.Policy != cache.Window || c.Window != 1 || pl.Validate() != nil {
		t.Errorf("hybrid placement with cache blocks %+v", pl)
	}
	if _, paged := hybridRow(t).place(Placements{Place: got[:2]}).Paging(); paged {
		t.Errorf("hybrid placement without cache blocks %+v pages", pl)
	}
	for _, tt := range []struct{ in, err string }{
		{"host:0,cuda:2-3", "block 1 is not placed"},
		{"host:0-1,cuda:1-3", "block 1 placed twice"},
		{"host:0-4", "outside 0-3"},
		{"cache:0-3,", "want PLACE:N"},
		{"gpu:0-3", "unknown place"},
		{"host", "want PLACE:N"},
		{"host:a", "not a number"},
		// The errors name the real problem: these said "outside 0-3" and
		// `block "" is not a number`.
		{"host:2-0,cuda:3", `"host:2-0": the range 2-0 is reversed (want 0-2)`},
		{"host:-1", `"host:-1": block -1 is negative (blocks count from 0)`},
		{"host:-1-2", "block -1 is negative"},
		{"host:0--1", "block -1 is negative"},
		{"host:3-", `"host:3-": the range has no last block`},
		{"host:-", `"host:-": block "-" is not a number`},
		// Digits too large for an int said "is not a number".
		{"host:0-18446744073709551615", `block "18446744073709551615" is out of range`},
		{"host:99999999999999999999", `block "99999999999999999999" is out of range`},
	} {
		if _, err := ParsePlace(tt.in, 4); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%q: error %v, want one saying %q", tt.in, err, tt.err)
		}
	}
}

// hybridRow is the hybrid mode's row of the modes table.
func hybridRow(t *testing.T) modeRow {
	t.Helper()
	r, ok := rowOf(ModeHybrid)
	if !ok {
		t.Fatal("the modes table has no hybrid row")
	}
	return r
}
