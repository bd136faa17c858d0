package gpu

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSignaturesOfKnownKernels pins the kinds of a few kernels as their
// .cu files declare them: a change to one of these parameter lists must
// change the driver's launches too.
func TestSignaturesOfKnownKernels(t *testing.T) {
	for name, want := range map[string]string{
		"fill_value":      "plf",
		"to_fp16":         "ppl", // unsigned short pointers are pointers too
		"add":             "pppl",
		"adam":            "pppplffffffff", // declared over two lines
		"reduce_partial":  "ppplli",
		"reduce_final":    "pppid",
		"layer_norm":      "ppppid",
		"embedding_grad":  "ppppli", // int pointers are pointers too
		"bias_grad":       "ppiil",
		"attn_probs_grad": "pppppiiiiiif", // declared over two lines
		"rotary":          "ppppliiiii",   // declared over two lines
		"fused_attn":      "pppiiiiiif",   // declared over two lines
		"cache_attend":    "ppppiiiiiif",  // declared over two lines
		"cache_attend16":  "ppppiiiiiifi", // declared over two lines
		"quant_xwt_row":   "ppppiiiil",    // declared over two lines
	} {
		if got, ok := Signatures[name]; !ok {
			t.Errorf("kernel %s missing from Signatures", name)
		} else if got != want {
			t.Errorf("kernel %s: Signatures %q, want %q", name, got, want)
		}
	}
	// Every kernel keyword of the sources, outside comments and
	// preprocessor lines, begins a declaration the parser read.
	keyword := regexp.MustCompile(`\bGPUZ_KERNEL\b|\bextern\s+"C"\s+__global__\b`)
	src := directiveRE.ReplaceAllString(commentRE.ReplaceAllString(Source(), ""), "")
	if n := len(keyword.FindAllString(src, -1)); len(Signatures) != n || len(declarations) != n {
		t.Errorf("Signatures has %d kernels (%d declarations), want the %d that the .cu files declare", len(Signatures), len(declarations), n)
	}
}

// TestParseSignatures checks the parser on declarations written the ways
// CUDA C allows.
func TestParseSignatures(t *testing.T) {
	src := `
#define GPUZ_KERNEL extern "C" __global__ void
// GPUZ_KERNEL commented(float *x) {
/* GPUZ_KERNEL blocked(int n) { */
GPUZ_KERNEL a(float *__restrict__ dst, const float *const src, long long n, float s) {
}
extern "C" __global__ void b(
	const double *in, // the input
	int64_t n, long m, const int k,
	double eps) {
}
GPUZ_KERNEL c(void) {}
GPUZ_KERNEL d() {}
static __device__ float helper(float x) { return x; }
`
	decls, err := parseSignatures(src)
	if err != nil {
		t.Fatal(err)
	}
	got := signaturesOf(decls)
	want := map[string]string{"a": "pplf", "b": "pllid", "c": "", "d": ""}
	compareSignatures(t, "parsed", got, "declared", want)

	for _, bad := range []string{
		"GPUZ_KERNEL e(unsigned n) {}",
		"GPUZ_KERNEL e(half h) {}",
		"GPUZ_KERNEL e(float) {}",
		"GPUZ_KERNEL e(int n) {}\nGPUZ_KERNEL e(int n) {}",
	} {
		if _, err := parseSignatures(bad); err == nil {
			t.Errorf("parseSignatures(%q) succeeded, want an error", bad)
		}
	}
}

// compareSignatures reports the kernels that two tables, named gotName and
// wantName, do not both have with the same kinds.
func compareSignatures(t *testing.T, gotName string, got map[string]string, wantName string, want map[string]string) {
	t.Helper()
	for _, name := range sortedNames(want) {
		if k, ok := got[name]; !ok {
			t.Errorf("kernel %s of %s is missing from %s", name, wantName, gotName)
		} else if k != want[name] {
			t.Errorf("kernel %s: %s %q, %s %q", name, gotName, k, wantName, want[name])
		}
	}
	for _, name := range sortedNames(got) {
		if _, ok := want[name]; !ok {
			t.Errorf("kernel %s of %s is missing from %s", name, gotName, wantName)
		}
	}
}

// argKinds are the constructors of Arg that the driver's launches use,
// with the kind each makes.
var argKinds = map[string]byte{"Pointer": 'p', "Int": 'i', "Long": 'l', "Float": 'f', "Double": 'd', "causal": 'i'}

// TestLaunchesMatchSignatures reads the driver's Go source and checks that
// every kernel it launches by name (through Kernels.each or
// Launcher.Launch) is in Signatures with the kinds of the arguments it
// passes, and that every kernel of Signatures is launched.
func TestLaunchesMatchSignatures(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	launched := map[string]bool{}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			var args []ast.Expr
			switch {
			case sel.Sel.Name == "each" && len(call.Args) >= 2:
				args = call.Args[2:]
			case sel.Sel.Name == "Launch" && len(call.Args) == 5:
				lit, ok := call.Args[4].(*ast.CompositeLit)
				if !ok {
					return true
				}
				args = lit.Elts
			default:
				return true
			}
			name, ok := call.Args[0].(*ast.BasicLit)
			if !ok || name.Kind != token.STRING {
				return true // each's own Launch, with its parameter
			}
			kernel, err := strconv.Unquote(name.Value)
			if err != nil {
				t.Fatal(err)
			}
			launched[kernel] = true
			pos := fset.Position(call.Pos())
			sig, ok := Signatures[kernel]
			if !ok {
				t.Errorf("%s: launches %s, which no .cu file declares", pos, kernel)
				return true
			}
			kinds := make([]byte, len(args))
			for i, a := range args {
				kinds[i] = '?'
				if c, ok := a.(*ast.CallExpr); ok {
					if id, ok := c.Fun.(*ast.Ident); ok && argKinds[id.Name] != 0 {
						kinds[i] = argKinds[id.Name]
					}
				}
			}
			if string(kinds) != sig {
				t.Errorf("%s: launches %s with %q, the kernel takes %q ('?': an argument the test cannot read)", pos, kernel, kinds, sig)
			}
			return true
		})
	}
	for _, name := range sortedNames(Signatures) {
		if !launched[name] {
			t.Errorf("kernel %s is declared but never launched by name", name)
		}
	}
}
