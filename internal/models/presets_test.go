package models

import (
	"strings"
	"testing"
)

// config is what the preset and validation tables need of a workload's
// configuration.
type config interface {
	Validate() error
	Build() (*Model, error)
}

// presetAs adapts a workload's preset function to the tables' type.
func presetAs[C config](preset func(string) (C, error)) func(string) (config, error) {
	return func(scale string) (config, error) { return preset(scale) }
}

// smallWith returns a workload's small preset changed by edit.
func smallWith[C config](preset func(string) (C, error), edit func(*C)) config {
	c, _ := preset(ScaleSmall)
	edit(&c)
	return c
}

// TestPresets pins every workload's presets, checks that they are valid,
// and that an unknown scale is refused.
func TestPresets(t *testing.T) {
	attention, resnet, linear := presetAs(AttentionPreset), presetAs(ResnetPreset), presetAs(LinearPreset)
	for _, tc := range []struct {
		preset func(string) (config, error)
		scale  string
		want   config
	}{
		// peer.py's CONFIGS["attention"].
		{attention, ScaleFull, AttentionConfig{Vocab: 1024, DModel: 512, Heads: 8, Layers: 12, SeqLen: 512, Feed: Feed{Samples: 60, Batch: 30, Epochs: 5}}},
		{attention, ScaleSmall, AttentionConfig{Vocab: 64, DModel: 32, Heads: 4, Layers: 2, SeqLen: 32, Feed: Feed{Samples: 8, Batch: 4, Epochs: 5}}},
		// peer.py's CONFIGS["resnet"].
		{resnet, ScaleFull, ResnetConfig{Levels: 12, Channels: 10, MidChannels: 30, ImageSize: 512, Kernel: 5, Feed: Feed{Samples: 6, Batch: 2, Epochs: 10}}},
		{resnet, ScaleSmall, ResnetConfig{Levels: 3, Channels: 4, MidChannels: 8, ImageSize: 32, Kernel: 3, Feed: Feed{Samples: 6, Batch: 2, Epochs: 10}}},
		{linear, ScaleFull, LinearConfig{Blocks: 12, LayersPerBlock: 10, Dims: 2000, Feed: Feed{Samples: 60, Batch: 30, Epochs: 5}}},
		{linear, ScaleSmall, LinearConfig{Blocks: 3, LayersPerBlock: 2, Dims: 128, Feed: Feed{Samples: 8, Batch: 4, Epochs: 5}}},
	} {
		got, err := tc.preset(tc.scale)
		if err != nil || got != tc.want {
			t.Errorf("preset %q = %+v, %v; want %+v", tc.scale, got, err, tc.want)
			continue
		}
		if err := got.Validate(); err != nil {
			t.Errorf("preset %s %+v: %v", tc.scale, got, err)
		}
	}
	for _, preset := range []func(string) (config, error){attention, resnet, linear} {
		if got, err := preset("huge"); err == nil {
			t.Errorf("the unknown scale huge gave %+v", got)
		}
	}
}

// TestValidate checks what Validate refuses, and that Build refuses it too.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config config
		want   string
	}{
		{"attention: zero vocab", smallWith(AttentionPreset, func(c *AttentionConfig) { c.Vocab = 0 }), "--vocab must be positive"},
		{"attention: negative heads", smallWith(AttentionPreset, func(c *AttentionConfig) { c.Heads = -1 }), "--heads must be positive"},
		{"attention: heads do not divide", smallWith(AttentionPreset, func(c *AttentionConfig) { c.Heads = 5 }), "--d-model (32) must be divisible by --heads (5)"},
		{"attention: odd d-model", smallWith(AttentionPreset, func(c *AttentionConfig) { c.DModel, c.Heads = 33, 3 }), "must be even"},
		{"attention: batch does not divide", smallWith(AttentionPreset, func(c *AttentionConfig) { c.Batch = 3 }), "must be a multiple of --batch"},
		{"attention: ids not exact", smallWith(AttentionPreset, func(c *AttentionConfig) { c.Vocab = 1<<24 + 1 }), "at most 2²⁴"},
		{"attention: too large", smallWith(AttentionPreset, func(c *AttentionConfig) { c.SeqLen = 1 << 20 }), "too large"},
		{"resnet: even kernel", smallWith(ResnetPreset, func(c *ResnetConfig) { c.Kernel = 4 }), "--kernel must be odd"},
		{"resnet: zero kernel", smallWith(ResnetPreset, func(c *ResnetConfig) { c.Kernel = 0 }), "--kernel must be positive"},
		{"resnet: zero levels", smallWith(ResnetPreset, func(c *ResnetConfig) { c.Levels = 0 }), "--levels must be positive"},
		{"resnet: negative channels", smallWith(ResnetPreset, func(c *ResnetConfig) { c.Channels = -1 }), "--channels must be positive"},
		{"resnet: batch does not divide", smallWith(ResnetPreset, func(c *ResnetConfig) { c.Batch = 4 }), "multiple of --batch"},
		{"resnet: huge images", smallWith(ResnetPreset, func(c *ResnetConfig) { c.ImageSize = 1 << 20 }), "too large"},
		{"resnet: kernel beyond the image", smallWith(ResnetPreset, func(c *ResnetConfig) { c.ImageSize, c.Kernel = 4, 9 }), "--kernel (9) must be at most 2 × --image-size − 1 (7)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.config.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
			if _, err := tc.config.Build(); err == nil {
				t.Error("Build accepted the sizes")
			}
		})
	}
}
