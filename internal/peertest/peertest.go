// Package peertest finds, for tests, the peers gpuz's agreement tests run
// against: PyTorch's interpreter (GPUZ_TORCH_PYTHON) and node with
// node-llama-cpp (GPUZ_NODE_LLAMA_CPP or the repository's .peer), and the
// repository's scripts that drive them. A test whose peer is missing is
// skipped with a line that names what to install; CI (.ci/run) installs
// both, so there every agreement test runs.
package peertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// LlamaCppInstall is the command that installs the llama.cpp peer, from
// the repository's root.
const LlamaCppInstall = "mkdir -p .peer && (cd .peer && npm i -E node-llama-cpp@3.21.1)"

// Root returns the repository's root: two folders above this package's
// source.
func Root(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("peertest: cannot find its own source file")
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// Script returns the path of the repository's scripts/NAME.
func Script(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(Root(t), "scripts", name)
}

// Python returns the interpreter GPUZ_TORCH_PYTHON names, or skips the
// test where it is not set.
func Python(t testing.TB) string {
	t.Helper()
	python := os.Getenv("GPUZ_TORCH_PYTHON")
	if python == "" {
		t.Skip("GPUZ_TORCH_PYTHON is not set: the PyTorch agreement runs in CI (.ci/run) and with GPUZ_TORCH_PYTHON=/usr/bin/python3")
	}
	return python
}

// LlamaCpp returns node's path and that of the repository's
// scripts/SCRIPT, or skips the test naming what is missing: node, or
// node-llama-cpp in GPUZ_NODE_LLAMA_CPP's folder or the repository's
// .peer. What says what the test does with the peer, as in "llama.cpp's
// agreement runs".
func LlamaCpp(t testing.TB, script, what string) (node, path string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("no node: %s with node and node-llama-cpp (%s)", what, LlamaCppInstall)
	}
	peer := os.Getenv("GPUZ_NODE_LLAMA_CPP")
	if peer == "" {
		peer = filepath.Join(Root(t), ".peer")
	}
	if _, err := os.Stat(filepath.Join(peer, "node_modules", "node-llama-cpp", "package.json")); err != nil {
		t.Skipf("node-llama-cpp is not installed in %s: %s after %s (or with GPUZ_NODE_LLAMA_CPP naming the folder it is installed in)", peer, what, LlamaCppInstall)
	}
	return node, Script(t, script)
}
