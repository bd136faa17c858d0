package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gpuz/internal/device"
)

// The doc-example test: every command line that README.md and docs/*.md
// show as an example (a line of a ```sh block that starts with "gpuz " or
// "bin/gpuz ", with its "\" continuations) runs, through the built binary,
// at a small scale, and must exit as the doc says, so that a doc cannot
// drift from the binary (as golang.org/x/perf's benchstat runs its
// manual's examples).

// docExampleLimit is how long one example may run; at --scale small each
// takes a second or two.
const docExampleLimit = 2 * time.Minute

// docExampleSkips are the examples that do not run, by their text as the
// doc writes it (continuations joined by one space, the comment cut), each
// with the reason.
var docExampleSkips = map[string]string{
	"gpuz compare old.json new.json": "the history's sitting compares two files the block does not make",
}

// docExampleAdjust are the examples that run with more than the small
// scale: the arguments added after the rest, by their text, with the
// reason.
var docExampleAdjust = map[string]struct {
	extra []string
	why   string
}{
	"gpuz attention eval hybrid,cpu --place host:0-1,cuda:2-13": {
		extra: []string{"--layers", "12"}, why: "--place names the full scale's 14 blocks",
	},
	"gpuz attention train hybrid,cpu --place host:0-1,cache:2-13 --policy window --win-size 3": {
		extra: []string{"--layers", "12"}, why: "--place names the full scale's 14 blocks",
	},
	"gpuz plan llm generate cuda,hybrid,cache --model llama-3.1-8b --precision bf16 --context 4096 --place host:0-18,cuda:19-33 --device sim:rtx4060-laptop --host-profile cpu-i7-13700h": {
		extra: []string{"--layers", "32"}, why: "--place names the full model's 34 blocks",
	},
}

// docExample is one example command line of a doc.
type docExample struct {
	file  string // the doc, from the module's root
	line  int    // its first line
	block int    // its ```sh block's index in the file: a block's examples run in order in one directory
	text  string // the command line, continuations joined, the comment cut
	// status is the exit status the doc says, in a comment "# exits N";
	// 0 where it says none.
	status int
}

// docExamplePattern matches an example's start: the binary, maybe as
// bin/gpuz, then its arguments.
var docExamplePattern = regexp.MustCompile(`^(bin/)?gpuz\s`)

// docExampleStatus finds the exit status an example's comment gives.
var docExampleStatus = regexp.MustCompile(`\bexits (\d+)\b`)

// readDocExamples returns the examples of the docs under root.
func readDocExamples(root string) ([]docExample, error) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var all []docExample
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading doc examples: %w", err)
		}
		rel, _ := filepath.Rel(root, f)
		all = append(all, parseDocExamples(rel, string(data))...)
	}
	return all, nil
}

// parseDocExamples returns the examples in doc, the text of file.
func parseDocExamples(file, doc string) []docExample {
	var out []docExample
	inSh, block := false, -1
	var cur strings.Builder
	start := 0
	for i, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			inSh = !inSh && strings.TrimSpace(strings.TrimPrefix(line, "```")) == "sh"
			if inSh {
				block++
			}
			cur.Reset()
			continue
		}
		if !inSh {
			continue
		}
		s := strings.TrimSpace(line)
		if cur.Len() == 0 {
			start = i + 1
		} else {
			cur.WriteByte(' ')
		}
		if c, ok := strings.CutSuffix(s, `\`); ok {
			cur.WriteString(strings.TrimSpace(c))
			continue
		}
		cur.WriteString(s)
		text := cur.String()
		cur.Reset()
		status := 0
		if c, comment, ok := strings.Cut(text, " #"); ok {
			text = strings.TrimSpace(c)
			if m := docExampleStatus.FindStringSubmatch(comment); m != nil {
				status, _ = strconv.Atoi(m[1])
			}
		}
		if docExamplePattern.MatchString(text) {
			out = append(out, docExample{file: file, line: start, block: block, text: strings.Join(strings.Fields(text), " "), status: status})
		}
	}
	return out
}

// docExampleArgs returns the arguments that an example runs with and the
// file, if any, that its standard output goes to ("> FILE"): the doc's,
// without the binary, at --scale small (a workload, plan or fit without
// --scale gets it, --scale demo becomes small: the demo's story is
// TestDemoScaleTellsTheStory's), take-mem for one second, and the
// adjustment's arguments after them.
func docExampleArgs(text string, extra []string) (args []string, stdout string, err error) {
	words := strings.Fields(text)[1:]
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case strings.ContainsAny(w, "$`'\"|;&<*"):
			return nil, "", fmt.Errorf("%q needs a shell: list it in docExampleSkips with a reason", w)
		case w == ">" && i+1 < len(words):
			stdout = words[i+1]
			i++
		case w == "--scale" && i+1 < len(words) && words[i+1] == "demo":
			args = append(args, w, "small")
			i++
		default:
			args = append(args, w)
		}
	}
	cmd, _, err := newRootCmd(io.Discard, io.Discard).Find(args)
	if err != nil {
		return nil, "", fmt.Errorf("no command for %q: %w", text, err)
	}
	if cmd.Flags().Lookup("scale") != nil && !slices.Contains(args, "--scale") {
		args = append(args, "--scale", "small")
	}
	if cmd.Name() == "take-mem" && !slices.Contains(args, "--for") {
		args = append(args, "--for", "1s")
	}
	return append(args, extra...), stdout, nil
}

// TestDocExamples runs every doc's example commands at a small scale, the
// examples of one ```sh block in order in a directory of their own (a
// later one may read what an earlier one wrote) with a private sim
// ledger, the blocks in parallel, and checks each one's exit status: 0,
// or N where the example's comment says "exits N".
func TestDocExamples(t *testing.T) {
	examples, err := readDocExamples(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) < 10 {
		t.Fatalf("found %d doc examples; the docs show more than 10", len(examples))
	}
	seen := map[string]bool{}
	blocks := map[string][]docExample{}
	var order []string
	for _, ex := range examples {
		seen[ex.text] = true
		key := fmt.Sprintf("%s#%d", ex.file, ex.block)
		if _, ok := blocks[key]; !ok {
			order = append(order, key)
		}
		blocks[key] = append(blocks[key], ex)
	}
	for text := range docExampleSkips {
		if !seen[text] {
			t.Errorf("docExampleSkips lists %q, which no doc shows", text)
		}
	}
	for text := range docExampleAdjust {
		if !seen[text] {
			t.Errorf("docExampleAdjust lists %q, which no doc shows", text)
		}
	}
	for _, key := range order {
		block := blocks[key]
		t.Run(strings.ReplaceAll(fmt.Sprintf("%s:%d", block[0].file, block[0].line), "/", "_"), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ledger := filepath.Join(dir, "ledger")
			for _, ex := range block {
				if why, ok := docExampleSkips[ex.text]; ok {
					t.Logf("%s:%d: skipped: %s", ex.file, ex.line, why)
					continue
				}
				if err := runDocExample(t, dir, ledger, ex, docExampleAdjust[ex.text].extra, ex.status); err != nil {
					t.Errorf("%s:%d: %s: %v", ex.file, ex.line, ex.text, err)
				}
			}
		})
	}
}

// runDocExample runs ex in dir on the sim ledger at ledger with extra
// arguments and returns an error unless it exits with want.
func runDocExample(t *testing.T, dir, ledger string, ex docExample, extra []string, want int) error {
	args, stdout, err := docExampleArgs(ex.text, extra)
	if err != nil {
		return err
	}
	// Files the example names by a path below the checkout are made in
	// dir: their folders first.
	for _, a := range append(args, stdout) {
		if strings.Contains(a, "/") && !strings.HasPrefix(a, "-") && !strings.Contains(a, ":") && !filepath.IsAbs(a) {
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(a)), 0o755); err != nil {
				return err
			}
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), docExampleLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, gpuzBinary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), device.LedgerEnv+"="+ledger)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if stdout != "" {
		f, err := os.Create(filepath.Join(dir, stdout))
		if err != nil {
			return err
		}
		defer f.Close()
		cmd.Stdout = f
	}
	began := time.Now()
	err = cmd.Run()
	status := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		status = ee.ExitCode()
	} else if err != nil {
		return fmt.Errorf("running gpuz %s: %w", strings.Join(args, " "), err)
	}
	t.Logf("%s:%d: gpuz %s: status %d in %.1fs", ex.file, ex.line, strings.Join(args, " "), status, time.Since(began).Seconds())
	if status != want {
		return fmt.Errorf("gpuz %s exited %d, want %d; output:\n%s", strings.Join(args, " "), status, want, out.String())
	}
	return nil
}
