package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJSONToStdoutAlone runs with --json -: standard output holds only the
// JSON, which parses, and the report (header, epochs, table) goes to
// standard error. The JSON records the command line the options give, not
// the process's own arguments.
func TestJSONToStdoutAlone(t *testing.T) {
	_, out, errOut := runSmallLinear(t, func(o *WorkloadOptions) {
		o.JSON = "-"
		o.IO.CommandLine = []string{"/opt/gpuz", "linear", "train", "cpu", "--scale", "small", "--json", "-"}
	})
	var res map[string]any
	dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
	if err := dec.Decode(&res); err != nil || res["modes"] == nil {
		t.Fatalf("stdout is not the results as JSON (%v):\n%.300s", err, out)
	}
	header, _ := res["header"].(map[string]any)
	env, _ := header["env"].(map[string]any)
	if got, want := env["command_line"], "/opt/gpuz linear train cpu --scale small --json -"; got != want {
		t.Errorf("JSON command line %q, want %q", got, want)
	}
	if rest, _ := io.ReadAll(dec.Buffered()); strings.TrimSpace(string(rest)) != "" || dec.More() {
		t.Errorf("stdout holds more than the JSON: %q", rest)
	}
	for _, want := range []string{"gpuz linear train (scale small)", "== cpu on host ==", "Analyze"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// TestOutputPathsCheckedFirst gives output paths that cannot be written:
// each is a usage error (status 2, one line) before anything runs, and a
// user's existing file is left as it was.
func TestOutputPathsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.json")
	if err := os.WriteFile(existing, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(existing, link); err != nil {
		t.Fatal(err)
	}
	base := []string{"linear", "train", "cpu", "--scale", "small", "--epochs", "2", "--dims", "100000"}
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"missing directory", []string{"--json", filepath.Join(dir, "no", "r.json")}, "no such file or directory"},
		{"directory", []string{"--json", dir}, "is a directory"},
		{"profile into a directory", []string{"--cpuprofile", dir}, "is a directory"},
		{"same file twice", []string{"--json", filepath.Join(dir, "x"), "--cpuprofile", filepath.Join(dir, ".", "x")}, "--json and --cpuprofile name the same file"},
		{"same file by a link", []string{"--json", existing, "--cpuprofile", link}, "name the same file"},
		{"flag taken as the file", []string{"--json", "--device"}, `looks like a flag`},
		{"profile to stdout", []string{"--cpuprofile", "-"}, "standard output is not allowed"},
		{"plan into a directory", nil, "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{}, base...), tc.flags...)
			if tc.flags == nil {
				args = []string{"plan", "linear", "train", "--json", dir}
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, &stdout, &stderr)
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			if code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Errorf("gpuz %q: status %d, stderr %q; want %d and one line with %q", args, code, stderr.String(), exitUsage, tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("gpuz %q ran: %.200q", args, stdout.String())
			}
		})
	}
	if data, _ := os.ReadFile(existing); string(data) != "keep" {
		t.Errorf("the user's file holds %q after the refused runs", data)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the checks left files behind: %v", entries)
	}
}

// TestProfileWriteError profiles to /dev/full: the run completes, prints
// its table, and reports that the profile could not be written (status 1).
func TestProfileWriteError(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"linear", "train", "cpu", "--scale", "small", "--epochs", "2", "--cpuprofile", "/dev/full"}, &stdout, &stderr)
	if code != exitFailure || !strings.Contains(stderr.String(), "writing the CPU profile to /dev/full: ") {
		t.Errorf("status %d, stderr %q; want %d and the profile's write error", code, stderr.String(), exitFailure)
	}
	if !strings.Contains(stdout.String(), "Analyze") {
		t.Errorf("the table was not printed:\n%s", stdout.String())
	}
}

// TestHelpUnknownTopic: gpuz help with an unknown topic is a usage error,
// one line; a known topic prints its help.
func TestHelpUnknownTopic(t *testing.T) {
	for _, args := range [][]string{{"help", "nosuchtopic"}, {"help", "plan", "lineer"}} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr)
		if code != exitUsage || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "unknown help topic") || stdout.Len() != 0 {
			t.Errorf("gpuz %q: status %d, stdout %.100q, stderr %q; want %d and one line", args, code, stdout.String(), stderr.String(), exitUsage)
		}
	}
	var stdout bytes.Buffer
	if code := run(context.Background(), []string{"help", "plan", "linear"}, &stdout, &bytes.Buffer{}); code != 0 || !strings.Contains(stdout.String(), "plan linear train|eval") {
		t.Errorf("gpuz help plan linear: status %d:\n%.300s", code, stdout.String())
	}
}

// TestDivergedRunExitsIncomplete: a run whose mode diverges (--lr 1e30)
// prints its table and exits 3, as a run with any mode not ok does;
// docs/reliability.md said 0.
func TestDivergedRunExitsIncomplete(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"linear", "train", "cpu", "--scale", "small", "--threads", "1", "--lr", "1e30"}, &stdout, &stderr)
	if want := "gpuz: 1 of 1 modes did not complete: cpu (diverged); the table above says why\n"; code != exitIncomplete || stderr.String() != want {
		t.Errorf("status %d, stderr %q; want %d and %q", code, stderr.String(), exitIncomplete, want)
	}
	if !strings.Contains(stdout.String(), "diverged: at epoch 0, batch 1") {
		t.Errorf("the table lacks the divergence:\n%s", stdout.String())
	}
}

// TestSnapshotNamesEscaped runs plan on snapshots whose names hold escape
// sequences (issue 44 item 2): the directory's name in plan's header, and
// a tensor's name, a shard's name and a weight_map key in the one-line
// error, each reach the terminal escaped, and a megabyte tensor name is
// shown bounded.
func TestSnapshotNamesEscaped(t *testing.T) {
	const config = `{"model_type": "llama", "hidden_size": 8, "intermediate_size": 16,
		"num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
		"vocab_size": 10, "max_position_embeddings": 16, "tie_word_embeddings": true}`
	hostile := "\x1b]0;pwned\a\x1b[2J\u009b31m\u202e"
	// header is a safetensors file holding one byte, the tensor name's,
	// of dtype dtype (an unknown one makes the name part of the error).
	header := func(name, dtype string) []byte {
		q, _ := json.Marshal(name)
		h := fmt.Sprintf(`{%s: {"dtype": %q, "shape": [1], "data_offsets": [0, 1]}}`, q, dtype)
		data := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
		return append(append(data, h...), 0)
	}
	for _, tc := range []struct {
		name  string
		dir   string            // the snapshot's directory name
		files map[string][]byte // beside config.json
		code  int
		want  string // on stdout (status 0) or stderr
	}{
		{"the directory's name in plan's header", "snap" + hostile, nil, 0, `Memory plan of gpuz llm snap\x1b]0;pwned\a\x1b[2J\u009b31m\u202e train`},
		{"a tensor's name", "snap", map[string][]byte{"model.safetensors": header("w"+hostile, "X")}, 2, `w\x1b]0;pwned\a\x1b[2J\u009b31m\u202e`},
		{"a megabyte tensor name", "snap", map[string][]byte{"model.safetensors": header(strings.Repeat("w", 1<<20), "X")}, 2, "www… (1048576 bytes)"},
		{"a shard's name", "snap", map[string][]byte{"s" + hostile + ".safetensors": header("w", "U8")}, 2, `s\x1b]0;pwned\a\x1b[2J\u009b31m\u202e.safetensors`},
		{"a weight_map key", "snap", map[string][]byte{"model.safetensors.index.json": []byte(`{"weight_map": {"k\u001b[2J\u009b": "../x"}}`)}, 2, `weight_map puts k\x1b[2J\u009b in "../x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tc.dir)
			files := map[string][]byte{"config.json": []byte(config)}
			maps.Copy(files, tc.files)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, data := range files {
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"plan", "llm", "train", "cpu", "--model", dir, "--seq-len", "4", "--batch", "1"}, &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("status %d, want %d; output %.400q, want it to hold %q", code, tc.code, out, tc.want)
			}
			if i := strings.IndexFunc(out, func(r rune) bool { return r < 0x20 && r != '\n' || r >= 0x7f && r <= 0x9f || r == '\u202e' }); i >= 0 {
				t.Errorf("a raw control character at byte %d: %.400q", i, out[max(0, i-40):])
			}
			if code == 2 && (strings.Count(stderr.String(), "\n") != 1 || stderr.Len() > 2000) {
				t.Errorf("want one short line on stderr, got %d bytes: %.400q", stderr.Len(), stderr.String())
			}
		})
	}
}
