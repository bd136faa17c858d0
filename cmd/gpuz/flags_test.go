package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"

	"gpuz/internal/bench"
	"gpuz/internal/cache"
)

// TestFormatFlag runs the small linear workload on the cpu and its plan
// with each --format: standard output holds only the results in that
// format, and a run's header, epoch lines and text table go to standard
// error.
func TestFormatFlag(t *testing.T) {
	base := []string{"linear", "train", "cpu", "--scale", "small", "--epochs", "2", "--threads", "1"}
	tests := []struct {
		name  string
		args  []string
		check func(stdout string) bool
	}{
		{"csv", []string{"--format", "csv"}, func(out string) bool {
			recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
			return err == nil && len(recs) == 2 && recs[0][0] == "mode" && recs[1][0] == "cpu"
		}},
		{"markdown", []string{"--format", "markdown"}, func(out string) bool {
			return strings.HasPrefix(out, "| mode | device |") && strings.Contains(out, "\n|---|")
		}},
		{"json", []string{"--format", "json"}, func(out string) bool { return json.Valid([]byte(out)) }},
		{"json shorthand", []string{"--json", "-"}, func(out string) bool { return json.Valid([]byte(out)) }},
		{"markdown wide", []string{"--format", "markdown", "--wide"}, func(out string) bool {
			return strings.Contains(out, "| stddev (") && strings.Contains(out, "| copy rate |")
		}},
	}
	for _, tt := range tests {
		for _, plan := range []bool{false, true} {
			args := append(append([]string{}, base...), tt.args...)
			if plan {
				args = append([]string{"plan"}, args...)
				if tt.name == "markdown wide" {
					continue // the plan's wide table has no copy rate
				}
			}
			t.Run(strings.Join(args[:1], "")+"/"+tt.name, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
					t.Fatalf("gpuz %q: exit status %d; stderr: %s", args, code, stderr.String())
				}
				if plan && tt.name == "csv" {
					if recs, err := csv.NewReader(&stdout).ReadAll(); err != nil || len(recs) != 2 || recs[0][6] != "device_need_bytes" {
						t.Errorf("plan csv: %v %q", err, recs)
					}
					return
				}
				if !plan && !tt.check(stdout.String()) {
					t.Errorf("standard output is not %s:\n%s", tt.name, stdout.String())
				}
				if plan && tt.name == "markdown" && !strings.Contains(stdout.String(), "| mode | placement |") {
					t.Errorf("plan as markdown:\n%s", stdout.String())
				}
				if !plan {
					for _, want := range []string{"gpuz linear train", "train: 1  mean loss:", "Analyze\n"} {
						if !strings.Contains(stderr.String(), want) {
							t.Errorf("standard error lacks %q:\n%s", want, stderr.String())
						}
					}
				}
			})
		}
	}
}

// TestFormatFlagRefused checks the bad --format values and combinations:
// status 2, one line on standard error, nothing run.
func TestFormatFlagRefused(t *testing.T) {
	for _, args := range [][]string{
		{"linear", "train", "cpu", "--format", "html"},
		{"linear", "train", "cpu", "--format", "csv", "--json", "-"},
		{"plan", "linear", "train", "cpu", "--format", "markdown", "--json", "plan.json"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != exitUsage || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("gpuz %q: status %d, stdout %q, stderr %q; want %d and one line on stderr", args, code, stdout.String(), stderr.String(), exitUsage)
		}
	}
}

// TestFlagsFillOptions runs a workload command and the plan command with a
// runF that keeps the options: the flags and arguments fill them, the
// sizes the user set and only those are in Sizes, and plan sets PlanOnly.
func TestFlagsFillOptions(t *testing.T) {
	for _, plan := range []bool{false, true} {
		got, err := parseFlags(t, plan, "train", "cpu,cuda", "--dims", "64", "--batch", "2", "--lr", "0.5", "--threads", "3")
		if err != nil {
			t.Fatal(err)
		}
		if got.Task != bench.TaskTrain || len(got.Modes) != 2 || got.Modes[1] != bench.ModeCUDA || got.LR != 0.5 || got.Threads != 3 || got.PlanOnly != plan {
			t.Errorf("options %+v", got)
		}
		if len(got.Sizes) != 2 || got.Sizes["dims"] != 64 || got.Sizes["batch"] != 2 {
			t.Errorf("sizes %v, want dims 64 and batch 2 only", got.Sizes)
		}
	}
}

// TestParseList reads comma lists, and refuses empty items.
func TestParseList(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
		err  string
	}{
		{"3", []string{"3"}, ""},
		{"1,3,6", []string{"1", "3", "6"}, ""},
		{" 0, 2MiB ,8", []string{"0", "2MiB", "8"}, ""},
		{"window,auto", []string{"window", "auto"}, ""},
		{"", nil, "empty value"},
		{"1,,3", nil, "empty value"},
		{"1,", nil, "empty value"},
	} {
		got, err := parseList("win-size", tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), "--win-size: ") {
				t.Errorf("parseList(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("parseList(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// parseFlags runs the linear command, or with plan the plan linear
// command, with args and a runF that keeps the options.
func parseFlags(t *testing.T, plan bool, args ...string) (*WorkloadOptions, error) {
	t.Helper()
	ios, _, _ := testIO()
	var got *WorkloadOptions
	cmd := newWorkloadCmd(ios, linearWorkload, plan, func(_ context.Context, o *WorkloadOptions) error {
		got = o
		return nil
	})
	cmd.SetArgs(args)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	return got, cmd.Execute()
}

// TestListFlags fills the options from list flags: one value sets the
// option, several make a sweep flag, in the order of the command line;
// an item that is not a number is refused.
func TestListFlags(t *testing.T) {
	o, err := parseFlags(t, false, "train", "--win-size", "1,3", "--dims", "64", "--take", "0,2MiB", "--policy", "auto", "--batch", "2,4")
	if err != nil {
		t.Fatal(err)
	}
	if o.Sizes["dims"] != 64 || o.Cache != (cache.Config{Policy: cache.Auto, Window: 3}) {
		t.Errorf("single values: sizes %v, cache %+v", o.Sizes, o.Cache)
	}
	var flags []string
	for _, f := range o.Sweep {
		flags = append(flags, f.Flag+"="+strings.Join(f.Values, ","))
	}
	if got := strings.Join(flags, " "); got != "win-size=1,3 take=0,2MiB batch=2,4" {
		t.Errorf("sweep %q", got)
	}
	for _, tt := range []struct{ args []string }{
		{[]string{"train", "--win-size", "1,x"}},
		{[]string{"train", "--dims", "64,"}},
		{[]string{"train", "--batch", "many"}},
	} {
		if _, err := parseFlags(t, false, tt.args...); err == nil {
			t.Errorf("%q was accepted", tt.args)
		}
	}
}

// TestTakeMemAmount reads take-mem's argument: a count of linear blocks
// or a size.
func TestTakeMemAmount(t *testing.T) {
	for _, tt := range []struct {
		in     string
		bytes  int64
		blocks int
	}{
		{"1", 160_080_000, 1},
		{"20", 3_201_600_000, 20},
		{"007", 7 * 160_080_000, 7},
		{"4GiB", 4 << 30, 0},
		{"512MiB", 512 << 20, 0},
		{"4GB", 4_000_000_000, 0},
		{"1.5GiB", 3 << 29, 0},
		{"100B", 100, 0},
	} {
		b, n, err := takeMemAmount(tt.in)
		if err != nil || b != tt.bytes || n != tt.blocks {
			t.Errorf("takeMemAmount(%q) = %d, %d, %v; want %d, %d", tt.in, b, n, err, tt.bytes, tt.blocks)
		}
	}
}
