package engine

import (
	"reflect"
	"testing"

	"gpuz/internal/cache"
)

// TestKeysMatchTheRecord checks that each placement's keys, from its
// options and footprint, are the keys read back from its record as files
// written before the keys were recorded give them (RecordedKeys): a run's
// benchmark names stay the same whichever a reader has.
func TestKeysMatchTheRecord(t *testing.T) {
	fp := Footprint{Window: 3, Pages: 76}
	for _, tt := range []struct {
		name string
		pl   Placement
		want [][2]string
	}{
		{"resident", Resident{}, nil},
		{"paged", Paged{Cache: cache.Config{Policy: cache.Window, Window: 0}}, [][2]string{{"policy", "window"}, {"window", "3"}}},
		{"paged, optimizer on host", Paged{Cache: cache.Config{Policy: cache.Auto, OptimizerOnHost: true}}, [][2]string{{"policy", "auto"}, {"window", "3"}}},
		{"hybrid", Hybrid{Blocks: []Where{OnHost, InCache, OnDevice}, Cache: cache.Config{Policy: cache.Window, Window: 1}}, nil},
		{"managed", Managed{PageSize: cache.DefaultPageSize}, [][2]string{{"resident", "3/76"}}},
		{"managed, advise host", Managed{PageSize: cache.DefaultPageSize, AdviseHost: true}, [][2]string{{"resident", "3/76"}, {"advise", "host"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.pl.Keys(fp)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Keys = %q, want %q", got, tt.want)
			}
			recorded := tt.pl.Describe(fp, 12, Recorded)
			if old := RecordedKeys(tt.pl, recorded); !reflect.DeepEqual(old, got) {
				t.Errorf("RecordedKeys(%q) = %q, want Keys' %q", recorded, old, got)
			}
		})
	}
}
