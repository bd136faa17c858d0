package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHelpShowsOwnUsageAndExamples: the root help's usage line is the main
// form, and a plan command's help shows plan examples, not the run's.
func TestHelpShowsOwnUsageAndExamples(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		want, reject string
	}{
		{[]string{"--help"}, "\n  gpuz MODEL train|eval [MODES] [flags]\n", ""},
		{[]string{"plan", "linear", "--help"}, "\n  gpuz plan linear train\n", "gpuz linear train cuda,cache,cpu"},
		{[]string{"help", "plan", "resnet"}, "\n  gpuz plan resnet eval --scale small --json -", "gpuz resnet train"},
		{[]string{"linear", "--help"}, "\n  gpuz linear train cuda,cache,cpu\n", "gpuz plan"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit status %d: %s", tc.args, code, stderr.String())
		}
		out := stdout.String()
		if !strings.Contains(out, tc.want) || (tc.reject != "" && strings.Contains(out, tc.reject)) {
			t.Errorf("gpuz %s: want %q and not %q in:\n%s", strings.Join(tc.args, " "), tc.want, tc.reject, out)
		}
	}
}
