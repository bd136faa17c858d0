//go:build !gpuzcuda

// The pages are those of the default build: the GPU build's help differs
// (selftest's --device defaults to cuda there), so this file is left out
// of it.

package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// usageDocsDir holds one Markdown page per command, generated from the
// commands themselves; docs/usage.md is the index that links them.
const usageDocsDir = "../../docs/usage"

var updateDocs = flag.Bool("update", false, "rewrite docs/usage from the commands' help (make docs)")

// usageDocsHeader opens every generated page.
const usageDocsHeader = "<!-- Generated from gpuz's commands by `make docs`: edit the commands' help in cmd/gpuz, not this page. -->\n\n"

// TestUsageDocs checks that docs/usage/ holds exactly the pages that
// cobra's doc package generates from the command tree, one per command,
// and rewrites them with -update (make docs).
func TestUsageDocs(t *testing.T) {
	got, err := usagePages()
	if err != nil {
		t.Fatal(err)
	}
	if *updateDocs {
		writeUsagePages(t, got)
		return
	}
	want, err := readUsagePages()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sortedKeys(got) {
		switch committed, ok := want[name]; {
		case !ok:
			t.Errorf("docs/usage/%s is missing: run make docs", name)
		case committed != got[name]:
			t.Errorf("docs/usage/%s differs from the help of its command: run make docs\n%s", name, firstDifference(committed, got[name]))
		}
	}
	for _, name := range sortedKeys(want) {
		if _, ok := got[name]; !ok {
			t.Errorf("docs/usage/%s names no command: run make docs", name)
		}
	}
}

// TestUsagePagesMachineIndependent checks the rewriting of machine-dependent
// flags that keeps the generated pages the same on every machine.
func TestUsagePagesMachineIndependent(t *testing.T) {
	pages, err := usagePages()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		page, want string
	}{
		{"gpuz_linear.md", "host threads for BLAS and element-wise kernels, at most 4 per CPU and 512 in all (default: the number of CPUs, up to 512)\n"},
		{"gpuz_plan_attention.md", "(default: the number of CPUs, up to 512)\n"},
	} {
		if !strings.Contains(pages[tc.page], tc.want) {
			t.Errorf("%s lacks %q", tc.page, tc.want)
		}
	}
	if strings.Contains(strings.Join(slices.Collect(maps.Values(pages)), ""), "Auto generated") {
		t.Error("a page has cobra's dated footer: DisableAutoGenTag is not set")
	}
}

// TestReadmeStaysShort checks the README's promise to a newcomer: the two
// set-up commands, on a page read in five minutes. A new feature adds a
// line and a link to it, not a section (docs/architecture.md).
func TestReadmeStaysShort(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n > 220 {
		t.Errorf("README.md has %d lines, more than 220: move the detail to docs/usage.md or docs/output.md and leave a line and a link", n)
	}
	for _, want := range []string{"\nmake run     #", "\nmake test    #"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md no longer gives the set-up command %q", strings.TrimSpace(want))
		}
	}
}

// usagePages generates the pages of the whole command tree, by file name.
func usagePages() (map[string]string, error) {
	root := newRootCmd(io.Discard, io.Discard)
	root.DisableAutoGenTag = true
	var err error
	visitCommands(root, func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if err == nil {
				err = machineIndependent(c, f)
			}
		})
	})
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gpuz-usage")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	prepend := func(string) string { return usageDocsHeader }
	link := func(name string) string { return name } // pages link each other within docs/usage
	if err := doc.GenMarkdownTreeCustom(root, dir, prepend, link); err != nil {
		return nil, err
	}
	return readPages(dir)
}

// machineIndependent rewrites a flag whose default or help depends on the
// machine (the number of CPUs) in words, so that the pages generated on any
// machine are the same. It fails when such a flag's help no longer has the
// form rewritten here, rather than let a machine's figure into the pages.
func machineIndependent(c *cobra.Command, f *pflag.Flag) error {
	if f.Name != "threads" {
		return nil
	}
	machine := fmt.Sprintf("at most %d (4 per CPU, %d at most)", maxThreads(), threadCap)
	if !strings.Contains(f.Usage, machine) {
		return fmt.Errorf("%s --threads: its help %q no longer says %q: update machineIndependent in usagedocs_test.go", c.CommandPath(), f.Usage, machine)
	}
	f.Usage = strings.Replace(f.Usage, machine, fmt.Sprintf("at most 4 per CPU and %d in all (default: the number of CPUs, up to %d)", threadCap, threadCap), 1)
	f.DefValue = "0" // pflag prints no default for a zero value: the help above says it
	return nil
}

// visitCommands calls fn on c and every command below it.
func visitCommands(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		visitCommands(sub, fn)
	}
}

// readUsagePages reads the committed pages; a missing directory holds none.
func readUsagePages() (map[string]string, error) {
	pages, err := readPages(usageDocsDir)
	if os.IsNotExist(err) {
		return map[string]string{}, nil
	}
	return pages, err
}

// readPages reads every .md file of dir, by file name.
func readPages(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	pages := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".md" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		pages[e.Name()] = string(b)
	}
	return pages, nil
}

// writeUsagePages replaces the committed pages with pages.
func writeUsagePages(t *testing.T, pages map[string]string) {
	t.Helper()
	old, err := readUsagePages()
	if err != nil {
		t.Fatal(err)
	}
	for name := range old {
		if _, ok := pages[name]; !ok {
			if err := os.Remove(filepath.Join(usageDocsDir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.MkdirAll(usageDocsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range pages {
		if err := os.WriteFile(filepath.Join(usageDocsDir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote %d pages to docs/usage", len(pages))
}

// firstDifference shows the first line where want and got differ.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  committed: %q\n  generated: %q", i+1, wl, gl)
		}
	}
	return ""
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
