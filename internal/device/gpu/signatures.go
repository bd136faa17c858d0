package gpu

import (
	"fmt"
	"regexp"
	"strings"
)

// Signatures lists every kernel of the .cu sources with the kinds of its
// parameters in order: p pointer, i int32, l int64, f float32, d float64.
// It is read from the kernels' declarations in the embedded sources when
// the package is initialised, so a kernel's parameters are written down
// once, in its .cu file. The shim's thunks are generated from it
// (shimthunks.h), the shim checks every launch against it and the NVRTC
// test checks it against the parameters of the compiled PTX.
var Signatures = signaturesOf(declarations)

// declaration is one kernel of the sources: its name and its parameters'
// kinds.
type declaration struct{ name, kinds string }

// declarations are the kernels of the sources in the order they are
// compiled (sourceFiles, then each file's in the order it declares them).
var declarations = mustParseDeclarations()

// mustParseDeclarations parses the embedded sources; they are part of the
// binary, so a declaration it cannot read is a bug of the sources that
// every test of the package reports.
func mustParseDeclarations() []declaration {
	var all []declaration
	for _, f := range sourceFiles {
		data, err := sources.ReadFile(f)
		if err != nil {
			panic("gpu: embedded kernel source missing: " + f) // the embed pattern guarantees it
		}
		decls, err := parseSignatures(string(data))
		if err != nil {
			panic(fmt.Sprintf("gpu: %s: %v", f, err))
		}
		all = append(all, decls...)
	}
	if len(signaturesOf(all)) != len(all) {
		panic("gpu: a kernel is declared in two .cu files")
	}
	return all
}

// signaturesOf maps each kernel of decls to its kinds.
func signaturesOf(decls []declaration) map[string]string {
	sigs := make(map[string]string, len(decls))
	for _, d := range decls {
		sigs[d.name] = d.kinds
	}
	return sigs
}

var (
	// commentRE matches a C comment, line or block.
	commentRE = regexp.MustCompile(`(?s)//[^\n]*|/\*.*?\*/`)
	// directiveRE matches a preprocessor line, such as the prologue's
	// #define GPUZ_KERNEL extern "C" __global__ void.
	directiveRE = regexp.MustCompile(`(?m)^[ \t]*#.*$`)
	// kernelRE matches a kernel declaration, through the prologue's macro or
	// spelled out, with its name and parameter list.
	kernelRE = regexp.MustCompile(`(?:\bGPUZ_KERNEL|\bextern\s+"C"\s+__global__\s+void)\s+(\w+)\s*\(([^)]*)\)`)
)

// scalarKinds maps the type of a kernel's scalar parameter, its qualifiers
// removed, to its kind. CUDA's long is 64 bits on the 64-bit hosts gpuz
// supports.
var scalarKinds = map[string]byte{
	"int": 'i', "int32_t": 'i',
	"long long": 'l', "long": 'l', "long long int": 'l', "int64_t": 'l',
	"float": 'f', "double": 'd',
}

// qualifiers are the words of a parameter's type that do not change its
// kind.
var qualifiers = map[string]bool{"const": true, "volatile": true, "__restrict__": true, "restrict": true, "signed": true}

// parseSignatures returns the kernels declared in src, a .cu source, in
// order: each name with the kinds of its parameters.
func parseSignatures(src string) ([]declaration, error) {
	src = commentRE.ReplaceAllString(src, "")
	src = directiveRE.ReplaceAllString(src, "")
	var decls []declaration
	seen := map[string]bool{}
	for _, m := range kernelRE.FindAllStringSubmatch(src, -1) {
		name := m[1]
		if seen[name] {
			return nil, fmt.Errorf("kernel %s declared twice", name)
		}
		seen[name] = true
		kinds, err := paramKinds(m[2])
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", name, err)
		}
		decls = append(decls, declaration{name, kinds})
	}
	return decls, nil
}

// paramKinds returns the kinds of a C parameter list such as
// "float *dst, const float *__restrict__ src, long long n, float scale".
func paramKinds(params string) (string, error) {
	params = strings.TrimSpace(params)
	if params == "" || params == "void" {
		return "", nil
	}
	var kinds []byte
	for i, p := range strings.Split(params, ",") {
		k, err := paramKind(p)
		if err != nil {
			return "", fmt.Errorf("parameter %d (%q): %w", i, strings.TrimSpace(p), err)
		}
		kinds = append(kinds, k)
	}
	return string(kinds), nil
}

// paramKind returns the kind of one C parameter declaration: 'p' for any
// pointer, else the kind of its scalar type, the parameter's name being the
// last word.
func paramKind(p string) (byte, error) {
	if strings.Contains(p, "*") {
		return 'p', nil
	}
	words := strings.Fields(p)
	if len(words) < 2 {
		return 0, fmt.Errorf("want a type and a name")
	}
	var typ []string
	for _, w := range words[:len(words)-1] {
		if !qualifiers[w] {
			typ = append(typ, w)
		}
	}
	k, ok := scalarKinds[strings.Join(typ, " ")]
	if !ok {
		return 0, fmt.Errorf("type %q is none of %s", strings.Join(typ, " "), "int, long long, float, double or a pointer")
	}
	return k, nil
}
