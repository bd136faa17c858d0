package hfconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gpuz/internal/quant"
	"gpuz/internal/termsafe"
)

// maxConfig bounds a config.json read from disk: real ones are a few KiB.
const maxConfig = 16 << 20

// Model is what `--model M` names: a configuration and where it came from.
type Model struct {
	Config
	Name    string // the preset's name, or the path given
	Dir     string // the snapshot directory when M was one, else ""
	Checked int    // how many safetensors or GGUF tensors were checked against Tensors() (0 when none)
	// Kinds is each parameter's storage kind, by transformers' name, when
	// M was a GGUF file; nil otherwise.
	Kinds map[string]quant.Kind
	// GGUF is the GGUF file's tensor table when M was one; nil otherwise.
	GGUF *GGUF
}

// Load resolves arg, which is a path to a config.json, a GGUF file (its
// name ending in .gguf: LoadGGUF), a directory holding config.json (a
// snapshot), or else a preset's name (case-insensitive). In
// a directory that also holds *.safetensors files or
// model.safetensors.index.json, the headers are checked against the
// config's Tensors() (CheckSafetensors). A path that exists wins over a
// preset of the same name.
func Load(arg string) (Model, error) {
	if arg == "" {
		return Model{}, fmt.Errorf("no model given (presets: %s)", presetNames())
	}
	fi, err := os.Stat(arg)
	if errors.Is(err, fs.ErrNotExist) {
		if p, ok := presetNamed(arg); ok {
			return Model{Config: p.Config, Name: p.Name}, nil
		}
		return Model{}, fmt.Errorf("%s: neither a file, a directory nor a preset (presets: %s)", termsafe.Short(arg), presetNames())
	}
	if err != nil {
		return Model{}, escapePath(err)
	}
	if !fi.IsDir() && strings.EqualFold(filepath.Ext(arg), ".gguf") {
		return LoadGGUF(arg)
	}
	if !fi.IsDir() {
		c, err := loadConfigFile(arg)
		if err != nil {
			return Model{}, err
		}
		return Model{Config: c, Name: arg}, nil
	}
	c, err := loadConfigFile(filepath.Join(arg, "config.json"))
	if err != nil {
		return Model{}, err
	}
	m := Model{Config: c, Name: arg, Dir: arg}
	if hasWeights(arg) {
		if m.Checked, err = CheckSafetensors(arg, c.Tensors()); err != nil {
			return Model{}, fmt.Errorf("%s: %w", termsafe.Short(arg), err)
		}
	}
	return m, nil
}

// loadConfigFile reads and parses the config.json at path.
func loadConfigFile(path string) (Config, error) {
	data, err := readSmallFile(path, maxConfig)
	if err != nil {
		return Config{}, err
	}
	c, err := Parse(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", termsafe.Short(path), err)
	}
	return c, nil
}

// hasWeights reports whether dir holds an index or a *.safetensors file.
func hasWeights(dir string) bool {
	if _, err := os.Lstat(filepath.Join(dir, IndexFile)); err == nil {
		return true
	}
	m, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	return len(m) > 0
}
