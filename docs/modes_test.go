package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// modeHomes are the files that may name a mode or read a placement's
// options: engine's placement files and bench's modes table. Paths are
// from the module's root.
var modeHomes = []string{
	"internal/engine/placement.go",
	"internal/engine/resident.go",
	"internal/engine/paged.go",
	"internal/engine/hybrid.go",
	"internal/engine/managed.go",
	"internal/bench/config.go",
}

// modeNames are the modes' names, as their constants (bench.ModeCUDA…)
// and as their strings.
var (
	modeConstants = []string{"ModeCUDA", "ModeCache", "ModeCPU", "ModeHybrid", "ModeManaged"}
	modeStrings   = []string{"cuda", "cache", "cpu", "hybrid", "managed"}
)

// placementFields are bench.Config's placement options (bench.Placements)
// and the placement a fit candidate carries (Config.Placed): read only in
// the modes table, which turns them into a mode's placement
// (bench.Mode.Placement). The cache's fields count when read through a
// .Cache selector.
var (
	placementFields = []string{"Place", "ManagedPage", "ManagedAdviseHost", "Placed"}
	cacheFields     = []string{"Policy", "Window", "OptimizerOnHost"}
)

// TestModesStayHome checks that no non-test Go file outside modeHomes
// names a mode (a bench.ModeX constant, or a mode's name compared with,
// switched on or converted to something called mode) or reads a
// placement's options from a bench.Config (Place, ManagedPage,
// ManagedAdviseHost, Placed, or Cache.Policy, .Window, .OptimizerOnHost; writes,
// as the command line's flags fill them, are allowed): the rest of the
// program asks the mode's methods (bench.Mode.OnHost, …) and the
// placement's (Flags, Settings, Keys, Describe). docs/architecture.md
// gives the grep that finds the same.
func TestModesStayHome(t *testing.T) {
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || slices.Contains(modeHomes, rel) {
			return nil
		}
		for _, f := range modeLeaks(t, path, rel) {
			t.Error(f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// modeLeaks returns each place file rel (read from path) names a mode or
// reads a placement's option, as "file:line: what".
func modeLeaks(t *testing.T, path, rel string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	var out []string
	report := func(n ast.Node, what string) {
		out = append(out, fmt.Sprintf("%s:%d: %s outside engine's placement files and bench's modes table", rel, fset.Position(n.Pos()).Line, what))
	}
	written := map[ast.Expr]bool{} // the left sides of assignments
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				written[l] = true
			}
		case *ast.Ident:
			// bench's own files name the constants unqualified.
			if f.Name.Name == "bench" && slices.Contains(modeConstants, n.Name) {
				report(n, "the mode constant "+n.Name)
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "bench" && slices.Contains(modeConstants, n.Sel.Name) {
				report(n, "the mode constant bench."+n.Sel.Name)
			}
			if written[n] {
				return true
			}
			if slices.Contains(placementFields, n.Sel.Name) {
				report(n, "a read of the placement option ."+n.Sel.Name)
			}
			if inner, ok := n.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "Cache" && slices.Contains(cacheFields, n.Sel.Name) {
				report(n, "a read of the placement option .Cache."+n.Sel.Name)
			}
		case *ast.BinaryExpr:
			if n.Op != token.EQL && n.Op != token.NEQ {
				return true
			}
			if name, ok := modeLiteral(n.X); ok && namesMode(n.Y) {
				report(n, "a comparison with the mode "+name)
			}
			if name, ok := modeLiteral(n.Y); ok && namesMode(n.X) {
				report(n, "a comparison with the mode "+name)
			}
		case *ast.SwitchStmt:
			if n.Tag == nil || !namesMode(n.Tag) {
				return true
			}
			for _, s := range n.Body.List {
				for _, e := range s.(*ast.CaseClause).List {
					if name, ok := modeLiteral(e); ok {
						report(e, "a case of the mode "+name)
					}
				}
			}
		case *ast.CallExpr:
			if len(n.Args) == 1 && namesMode(n.Fun) {
				if name, ok := modeLiteral(n.Args[0]); ok {
					report(n, "a conversion of the mode "+name)
				}
			}
		}
		return true
	})
	return out
}

// modeLiteral reports whether e is a string literal naming a mode, and
// which.
func modeLiteral(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil || !slices.Contains(modeStrings, s) {
		return "", false
	}
	return s, true
}

// namesMode reports whether e is called mode: an identifier or a
// selector named mode or Mode (mode, m.Mode, bench.Mode).
func namesMode(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return strings.EqualFold(e.Name, "mode")
	case *ast.SelectorExpr:
		return strings.EqualFold(e.Sel.Name, "mode")
	case *ast.CallExpr: // string(m.Mode)
		return len(e.Args) == 1 && namesMode(e.Args[0])
	}
	return false
}
