package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
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
