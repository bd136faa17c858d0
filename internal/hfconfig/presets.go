package hfconfig

import (
	"embed"
	"fmt"
	"strings"
)

// presetFiles holds the published config.json of each preset, as
// presets/NAME.json.
//
//go:embed presets/*.json
var presetFiles embed.FS

// Preset is a published model gpuz knows by name.
type Preset struct {
	Name   string // lower-case, e.g. "smollm2-135m"
	Repo   string // the Hugging Face repository, e.g. "HuggingFaceTB/SmolLM2-135M"
	Source string // URL of the config.json it was written from
	Params int64  // the published total parameter count (tied weights once)
	Config Config
}

// presetIndex is each preset's repository, source and published count; its
// config is presets/NAME.json. huggingface.co cannot be reached from where
// these were written: each file is the published config.json as public
// repositories vendor or quote it (the copies agree with one another on
// every field that changes the computation), and the counts are the
// safetensors totals the model pages publish.
var presetIndex = []Preset{
	{
		// The file as the Hub serves it (no trailing newline; the same
		// text as gpt2-large's but for the sizes); vendored copies that
		// transformers re-saved add n_inner, torch_dtype, use_cache and
		// the scale/reorder flags at their defaults.
		Name: "gpt2", Repo: "openai-community/gpt2",
		Source: "https://huggingface.co/openai-community/gpt2/blob/main/config.json",
		Params: 124_439_808,
	},
	{
		Name: "smollm2-135m", Repo: "HuggingFaceTB/SmolLM2-135M",
		Source: "https://huggingface.co/HuggingFaceTB/SmolLM2-135M/blob/main/config.json",
		Params: 134_515_008,
	},
	{
		Name: "qwen2.5-0.5b", Repo: "Qwen/Qwen2.5-0.5B",
		Source: "https://huggingface.co/Qwen/Qwen2.5-0.5B/blob/main/config.json",
		Params: 494_032_768,
	},
	{
		Name: "llama-3.2-1b", Repo: "meta-llama/Llama-3.2-1B",
		Source: "https://huggingface.co/meta-llama/Llama-3.2-1B/blob/main/config.json",
		Params: 1_235_814_400,
	},
	{
		Name: "tinyllama-1.1b", Repo: "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
		Source: "https://huggingface.co/TinyLlama/TinyLlama-1.1B-Chat-v1.0/blob/main/config.json",
		Params: 1_100_048_384,
	},
	{
		Name: "llama-3.1-8b", Repo: "meta-llama/Llama-3.1-8B",
		Source: "https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json",
		Params: 8_030_261_248,
	},
}

// Presets returns the presets, in the order of presetIndex, each with its
// embedded config.json parsed. The files are part of the program and their
// tests parse every one, so a file that does not parse is a bug of the
// build: Presets panics naming it.
func Presets() []Preset {
	ps := make([]Preset, len(presetIndex))
	for i, p := range presetIndex {
		c, err := loadPreset(p.Name)
		if err != nil {
			panic(fmt.Sprintf("hfconfig: embedded preset %s: %v", p.Name, err))
		}
		p.Config = c
		ps[i] = p
	}
	return ps
}

// loadPreset parses presets/NAME.json.
func loadPreset(name string) (Config, error) {
	data, err := presetFiles.ReadFile("presets/" + name + ".json")
	if err != nil {
		return Config{}, err
	}
	return Parse(data)
}

// presetNamed returns the preset named name, case-insensitively.
func presetNamed(name string) (Preset, bool) {
	for _, p := range presetIndex {
		if strings.EqualFold(p.Name, name) {
			c, err := loadPreset(p.Name)
			if err != nil {
				panic(fmt.Sprintf("hfconfig: embedded preset %s: %v", p.Name, err))
			}
			p.Config = c
			return p, true
		}
	}
	return Preset{}, false
}

// presetNames lists the presets' names, for error messages.
func presetNames() string {
	names := make([]string, len(presetIndex))
	for i, p := range presetIndex {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}
