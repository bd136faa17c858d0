package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestFitSeqLenMax asks fit for the longest sequence each mode on the
// device trains, and checks each answer against gpuz plan of the command
// fit prints: that configuration fits at that length and not at one token
// more (unless the length is the model's maximum positions). The host's
// memory is given (--host-memory), so that the answer does not move with
// this machine's free memory.
func TestFitSeqLenMax(t *testing.T) {
	const maxPositions = 8192 // smollm2-135m's max_position_embeddings
	host := []string{"--host-memory", "4GiB"}
	args := append([]string{"fit", "llm", "train", "--model", "smollm2-135m", "--layers", "4", "--seq-len", "max",
		"--device", "sim:1GiB", "--margin", "0", "--format", "json"}, host...)
	// A ledger of its own: another process holding the simulated
	// device's memory (a test running beside) must not move the answer.
	env := append(os.Environ(), "GPUZ_SIM_LEDGER="+filepath.Join(t.TempDir(), "ledger"))
	cmd := exec.Command(gpuzBinary, args...)
	cmd.Env = env
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var doc struct {
		Longest []struct {
			Mode    string `json:"mode"`
			Tokens  int    `json:"tokens"`
			Command string `json:"command"`
		} `json:"longest_sequences"`
		Entries []struct {
			Command string `json:"command"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	modes := []string{}
	for _, l := range doc.Longest {
		modes = append(modes, l.Mode)
	}
	slices.Sort(modes)
	if !slices.Equal(modes, []string{"cache", "cuda", "managed"}) {
		t.Fatalf("longest sequences of modes %v, want cache, cuda and managed", modes)
	}
	for i, l := range doc.Longest[1:] {
		if l.Tokens > doc.Longest[i].Tokens {
			t.Errorf("%s's %d tokens listed after %s's %d: want the longest first", l.Mode, l.Tokens, doc.Longest[i].Mode, doc.Longest[i].Tokens)
		}
	}
	first := doc.Longest[0]
	if len(doc.Entries) == 0 || !strings.Contains(doc.Entries[0].Command, "--seq-len "+strconv.Itoa(first.Tokens)+" ") {
		t.Errorf("the ranking's first command %v: want it at the longest sequence, %d tokens", doc.Entries[:min(1, len(doc.Entries))], first.Tokens)
	}
	// fits plans command (a gpuz llm train command line, as fit prints
	// it) at n tokens and says whether the device and the host hold it.
	fits := func(command string, n int) bool {
		words := strings.Fields(command)
		i := slices.Index(words, "--seq-len")
		if len(words) < 3 || words[0] != "gpuz" || i < 0 {
			t.Fatalf("command %q: want gpuz llm train … --seq-len N", command)
		}
		words[i+1] = strconv.Itoa(n)
		plan := append(append([]string{"plan"}, words[1:]...), append(host, "--format", "json")...)
		cmd := exec.Command(gpuzBinary, plan...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("gpuz %s: %v: %s", strings.Join(plan, " "), err, out)
		}
		var p struct {
			Modes []planRow `json:"modes"`
		}
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatal(err)
		}
		// A cache plan lists every policy: the command's row is the one
		// of its --policy and --optimizer-on.
		flag := func(name string) string {
			if i := slices.Index(words, name); i >= 0 {
				return words[i+1]
			}
			return ""
		}
		i = slices.IndexFunc(p.Modes, func(m planRow) bool {
			return m.Policy == flag("--policy") && m.OptOnHost == (flag("--optimizer-on") == "host")
		})
		if i < 0 {
			t.Fatalf("gpuz %s: no row of its policy: %s", strings.Join(plan, " "), out)
		}
		m := p.Modes[i]
		return m.Status == "ok" && m.FitsDevice && m.FitsHost
	}
	for _, l := range doc.Longest {
		if l.Tokens < 2 || !fits(l.Command, l.Tokens) {
			t.Errorf("%s: %q does not fit at its longest sequence, %d tokens", l.Mode, l.Command, l.Tokens)
		}
		if l.Tokens < maxPositions && fits(l.Command, l.Tokens+1) {
			t.Errorf("%s: %q fits one token past its longest sequence, %d", l.Mode, l.Command, l.Tokens)
		}
	}
}

// planRow is what TestFitSeqLenMax reads of a plan's mode row.
type planRow struct {
	Policy     string `json:"policy"`
	OptOnHost  bool   `json:"optimizer_on_host"`
	FitsDevice bool   `json:"fits_device"`
	FitsHost   bool   `json:"fits_host"`
	Status     string `json:"status"`
}
