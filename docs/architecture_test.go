// Package docs_test checks that docs/architecture.md states the code's
// import graph exactly.
package docs_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the module path: gpuz packages are the import paths below it.
const module = "gpuz"

// graphTags are the build tag sets whose imports the graph is the union
// of: the default build, the GPU build (internal/device/cuda's imports
// are there only) and the pure-Go build.
var graphTags = []string{"", "gpuzcuda", "purego"}

// graph is an import graph: for each package, the gpuz packages its
// non-test files import.
type graph map[string][]string

// TestImportGraph checks the import graph in docs/architecture.md's
// ```imports block against go list's: every gpuz package and every import
// of a gpuz package by a non-test file, in any of graphTags, must be in
// the block, and nothing else. Test files' imports do not count: they may
// reach packages above their own (engine's tests build models). The block
// lists the packages top down, so each import must also name a package
// listed below the importer's line: no package imports one above it.
func TestImportGraph(t *testing.T) {
	doc, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	documented, order, err := parseImports(string(doc))
	if err != nil {
		t.Fatalf("architecture.md: %v", err)
	}
	actual := graph{}
	for _, tags := range graphTags {
		if err := listImports(actual, tags); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range diffGraphs(documented, actual) {
		t.Errorf("architecture.md's ```imports block %s", d)
	}
	for _, d := range upwardImports(documented, order) {
		t.Errorf("architecture.md's ```imports block: %s", d)
	}
}

// parseImports reads the ```imports block of doc: one line per package,
// "NAME -> NAME, NAME", the right side empty for a package that imports no
// gpuz package. A NAME is a path below gpuz/internal/, or one starting
// with cmd/ or scripts/ below gpuz/. It returns the graph by import path and the
// packages in the order of their lines.
func parseImports(doc string) (graph, []string, error) {
	_, block, ok := strings.Cut(doc, "\n```imports\n")
	if !ok {
		return nil, nil, fmt.Errorf("no ```imports block")
	}
	block, _, ok = strings.Cut(block, "\n```")
	if !ok {
		return nil, nil, fmt.Errorf("the ```imports block does not end")
	}
	g := graph{}
	var order []string
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		line := sc.Text()
		from, to, ok := strings.Cut(line, "->")
		if !ok || strings.TrimSpace(from) == "" {
			return nil, nil, fmt.Errorf("line %q is not NAME -> NAME, NAME", line)
		}
		pkg := importPath(strings.TrimSpace(from))
		if _, dup := g[pkg]; dup {
			return nil, nil, fmt.Errorf("%s has two lines", pkg)
		}
		g[pkg] = []string{}
		order = append(order, pkg)
		for _, name := range strings.Split(to, ",") {
			if name = strings.TrimSpace(name); name != "" {
				g[pkg] = append(g[pkg], importPath(name))
			}
		}
	}
	return g, order, nil
}

// importPath is the import path of a NAME of the ```imports block.
func importPath(name string) string {
	if strings.HasPrefix(name, "cmd/") || strings.HasPrefix(name, "scripts/") {
		return module + "/" + name
	}
	return module + "/internal/" + name
}

// listImports adds to g the gpuz packages that have non-test Go files
// under the build tags (comma-separated, "" for none) and their imports of
// gpuz packages, from go list.
func listImports(g graph, tags string) error {
	// Each line: the import path, the number of non-test Go files (cgo
	// ones included), then the imports.
	cmd := exec.Command("go", "list", "-tags="+tags, "-f",
		`{{.ImportPath}} {{len .GoFiles}} {{len .CgoFiles}}{{range .Imports}} {{.}}{{end}}`, module+"/...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go list -tags=%q: %v", tags, err)
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 3 || f[1] == "0" && f[2] == "0" {
			continue // tests only, such as this package
		}
		if _, ok := g[f[0]]; !ok {
			g[f[0]] = []string{}
		}
		for _, imp := range f[3:] {
			if strings.HasPrefix(imp, module+"/") && !slices.Contains(g[f[0]], imp) {
				g[f[0]] = append(g[f[0]], imp)
			}
		}
	}
	return nil
}

// diffGraphs says what doc, the documented graph, lacks of actual and what
// it has that actual does not: packages, then imports, one line each.
func diffGraphs(doc, actual graph) []string {
	var diffs []string
	for _, pkg := range sortedKeys(actual) {
		if _, ok := doc[pkg]; !ok {
			diffs = append(diffs, fmt.Sprintf("lacks the package %s (a line %q)", pkg, short(pkg)+" -> "+shortList(actual[pkg])))
		}
	}
	for _, pkg := range sortedKeys(doc) {
		if _, ok := actual[pkg]; !ok {
			diffs = append(diffs, fmt.Sprintf("has the package %s, which has no non-test Go files", pkg))
		}
	}
	for _, pkg := range sortedKeys(actual) {
		if _, ok := doc[pkg]; !ok {
			continue
		}
		for _, imp := range sorted(actual[pkg]) {
			if !slices.Contains(doc[pkg], imp) {
				diffs = append(diffs, fmt.Sprintf("lacks the import %s -> %s", short(pkg), short(imp)))
			}
		}
		for _, imp := range sorted(doc[pkg]) {
			if !slices.Contains(actual[pkg], imp) {
				diffs = append(diffs, fmt.Sprintf("has the import %s -> %s, which no non-test file of %s makes", short(pkg), short(imp), pkg))
			}
		}
	}
	return diffs
}

// upwardImports names each import of g whose package is not listed below
// the importer in order.
func upwardImports(g graph, order []string) []string {
	var diffs []string
	for i, pkg := range order {
		for _, imp := range g[pkg] {
			if !slices.Contains(order[i+1:], imp) {
				diffs = append(diffs, fmt.Sprintf("%s imports %s, which is not listed below it", short(pkg), short(imp)))
			}
		}
	}
	return diffs
}

// short is the NAME of an import path in the ```imports block.
func short(pkg string) string {
	if s, ok := strings.CutPrefix(pkg, module+"/internal/"); ok {
		return s
	}
	return strings.TrimPrefix(pkg, module+"/")
}

// shortList is the right side of a line of the ```imports block.
func shortList(pkgs []string) string {
	names := make([]string, len(pkgs))
	for i, p := range sorted(pkgs) {
		names[i] = short(p)
	}
	return strings.Join(names, ", ")
}

func sortedKeys(g graph) []string {
	keys := make([]string, 0, len(g))
	for k := range g {
		keys = append(keys, k)
	}
	return sorted(keys)
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
