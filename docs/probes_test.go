package docs_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// devicePkg is package device's import path: it and the packages below it
// (device/cuda, device/gpu, device/cudainit) may know their own types.
const devicePkg = module + "/internal/device"

// TestNoDeviceProbes checks architecture.md's rule "nothing outside
// package device asserts a device's concrete type": in the non-test files
// of every gpuz package outside internal/device and below it (default
// build tags), no type assertion or type switch has an operand of type
// device.Device (a probe for an optional method, or for what the device
// is), and none asserts or switches to a type of device's packages that
// is a device (one implementing device.Device, as *device.Host,
// *device.Sim, *cuda.Device, *gpu.ShimDevice do). What a device is and can
// do is read from its Caps. Assertions to device's other types (an error
// to *device.OutOfMemoryError) are not probes and pass.
func TestNoDeviceProbes(t *testing.T) {
	c := loadChecker(t)
	for _, p := range c.pkgs {
		if !strings.HasPrefix(p.ImportPath, module+"/") || underDevice(p.ImportPath) {
			continue
		}
		files := append(append([]string{}, p.GoFiles...), p.CgoFiles...)
		if len(files) == 0 {
			continue
		}
		for _, probe := range c.check(t, p.ImportPath, p.Dir, files, nil) {
			t.Errorf("%s (read the device's Caps instead)", probe)
		}
	}
}

// TestProbeCheck runs TestNoDeviceProbes' check on small packages: it
// flags each kind of probe, and not what only looks like one.
func TestProbeCheck(t *testing.T) {
	c := loadChecker(t)
	const header = `package p

import (
	"errors"

	"gpuz/internal/device"
)

var (
	_ = errors.New
	_ device.Device
)
`
	tests := []struct {
		name, body string
		probes     int
	}{
		{"concrete type", `func f(d device.Device) bool { _, ok := d.(*device.Host); return ok }`, 1},
		{"optional method", `func f(d device.Device) bool { _, ok := d.(interface{ Reserve(int64) (func(), error) }); return ok }`, 1},
		{"type switch", `func f(d device.Device) int {
			switch d.(type) {
			case *device.Sim:
				return 1
			}
			return 0
		}`, 1},
		{"a device from any", `func f(v any) bool { _, ok := v.(*device.Sim); return ok }`, 1},
		{"a device from any, switched", `func f(v any) int {
			switch v.(type) {
			case int:
				return 0
			case *device.Host, *device.Sim:
				return 1
			}
			return 2
		}`, 2},
		{"Caps", `func f(d device.Device) bool { return d.Caps().Kind == device.KindHost }`, 0},
		{"an error of package device", `func f(err error) bool {
			var oom *device.OutOfMemoryError
			_, ok := err.(*device.OutOfMemoryError)
			return ok || errors.As(err, &oom)
		}`, 0},
		{"a workload's method", `func f(w any) int {
			if n, ok := w.(interface{ DataLen() int }); ok {
				return n.DataLen()
			}
			return 0
		}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.check(t, "p", "", []string{"p.go"}, map[string]string{"p.go": header + tt.body + "\n"})
			if len(got) != tt.probes {
				t.Errorf("%d probes, want %d: %q", len(got), tt.probes, got)
			}
		})
	}
}

// listedPackage is a package as go list -json describes it.
type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Export     string // its export data, from go list -export
}

// checker type-checks gpuz packages from source against the export data
// of their imports and finds device probes in them.
type checker struct {
	fset *token.FileSet
	imp  types.Importer
	pkgs []listedPackage
	// device is device.Device's interface.
	device *types.Interface
}

var (
	checkerOnce sync.Once
	theChecker  *checker
	checkerErr  error
)

// loadChecker lists the gpuz packages and their dependencies with their
// export data (building what the build cache lacks), once per test
// binary.
func loadChecker(t *testing.T) *checker {
	t.Helper()
	checkerOnce.Do(func() { theChecker, checkerErr = newChecker() })
	if checkerErr != nil {
		t.Fatal(checkerErr)
	}
	return theChecker
}

func newChecker() (*checker, error) {
	cmd := exec.Command("go", "list", "-deps", "-export", "-json=ImportPath,Dir,GoFiles,CgoFiles,Export", module+"/...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %v", err)
	}
	c := &checker{fset: token.NewFileSet()}
	exports := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list -export's output: %v", err)
		}
		exports[p.ImportPath] = p.Export
		c.pkgs = append(c.pkgs, p)
	}
	c.imp = importer.ForCompiler(c.fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	dev, err := c.imp.Import(devicePkg)
	if err != nil {
		return nil, fmt.Errorf("importing %s: %v", devicePkg, err)
	}
	obj := dev.Scope().Lookup("Device")
	if obj == nil {
		return nil, fmt.Errorf("%s has no Device", devicePkg)
	}
	iface, ok := obj.Type().Underlying().(*types.Interface)
	if !ok {
		return nil, fmt.Errorf("%s.Device is %s, not an interface", devicePkg, obj.Type().Underlying())
	}
	c.device = iface
	return c, nil
}

// check type-checks the package path of the files in dir (or, where src
// is not nil, of the sources it gives by name) and returns its device
// probes, one line each naming the place. A package that does not
// type-check fails the test: its probes would go unseen.
func (c *checker) check(t *testing.T, path, dir string, files []string, src map[string]string) []string {
	t.Helper()
	var parsed []*ast.File
	for _, name := range files {
		var text any
		if src != nil {
			text = src[name]
		}
		f, err := parser.ParseFile(c.fset, filepath.Join(dir, name), text, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: c.imp, FakeImportC: true}
	if _, err := conf.Check(path, c.fset, parsed, info); err != nil {
		t.Fatalf("type-checking %s: %v", path, err)
	}
	var probes []string
	flag := func(n ast.Node, format string, args ...any) {
		probes = append(probes, c.fset.Position(n.Pos()).String()+": "+fmt.Sprintf(format, args...))
	}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeAssertExpr:
				if x := info.Types[n.X].Type; isDeviceInterface(x) {
					flag(n, "a type assertion or switch on a %s", x)
				} else if n.Type != nil && c.isDevice(info.Types[n.Type].Type) {
					flag(n, "a type assertion to %s", info.Types[n.Type].Type)
				}
			case *ast.TypeSwitchStmt:
				if x := switchOperand(n); x != nil && isDeviceInterface(info.Types[x].Type) {
					return true // flagged at its assertion
				}
				for _, s := range n.Body.List {
					for _, e := range s.(*ast.CaseClause).List {
						if typ := info.Types[e].Type; c.isDevice(typ) {
							flag(e, "a type switch case %s", typ)
						}
					}
				}
			}
			return true
		})
	}
	return probes
}

// switchOperand is the operand of a type switch, x in switch x.(type) or
// switch v := x.(type).
func switchOperand(s *ast.TypeSwitchStmt) ast.Expr {
	var e ast.Expr
	switch a := s.Assign.(type) {
	case *ast.ExprStmt:
		e = a.X
	case *ast.AssignStmt:
		e = a.Rhs[0]
	}
	if ta, ok := e.(*ast.TypeAssertExpr); ok {
		return ta.X
	}
	return nil
}

// isDeviceInterface reports whether t is device.Device.
func isDeviceInterface(t types.Type) bool {
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == devicePkg && n.Obj().Name() == "Device"
}

// isDevice reports whether t, or what it points to, is a concrete type
// declared in device's packages that is a device: it, or a pointer to
// it, implements device.Device. Interfaces are not concrete: asserting
// an any to device.Device asks nothing of the device.
func (c *checker) isDevice(t types.Type) bool {
	base := t
	if p, ok := t.(*types.Pointer); ok {
		base = p.Elem()
	}
	n, ok := base.(*types.Named)
	if !ok || n.Obj().Pkg() == nil || !underDevice(n.Obj().Pkg().Path()) || types.IsInterface(n) {
		return false
	}
	return types.Implements(n, c.device) || types.Implements(types.NewPointer(n), c.device)
}

// underDevice reports whether the package path is device's or below it.
func underDevice(path string) bool {
	return path == devicePkg || strings.HasPrefix(path, devicePkg+"/")
}
