package levers

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// LoRA is low-rank adaptation (Hu et al. 2021), as Hugging Face PEFT
// applies it: each target layer y = x·Wᵀ gains two trained matrices, A
// (Rank × in) and B (out × Rank), and computes
// y = x·Wᵀ + (Alpha/Rank)·(x·Aᵀ)·Bᵀ, while every weight of the model
// itself is frozen: no gradient, no optimizer state, no update. The zero
// value is off.
type LoRA struct {
	// Rank is R, 0 when LoRA is off.
	Rank int
	// Alpha is α; 0 stands for Rank, PEFT's scale α/R = 1.
	Alpha float64
	// Targets names the layers that get adapters, as the workload names
	// them, in a comma list, or AllLinear; "" is the workload's default.
	// (A string, not a slice, so that configs stay comparable.)
	Targets string
}

// AllLinear targets every linear layer but the output head, as PEFT's
// "all-linear" does.
const AllLinear = "all-linear"

// MaxLoRARank bounds --lora: far beyond any rank used in practice (PEFT's
// examples use 8 to 256), small enough that no adapter's size overflows.
const MaxLoRARank = 1 << 16

// On reports whether LoRA is on.
func (l LoRA) On() bool { return l.Rank > 0 }

// Scale returns α/R, the factor of the adapters' product.
func (l LoRA) Scale() float64 {
	if l.Alpha == 0 {
		return 1
	}
	return l.Alpha / float64(l.Rank)
}

// Validate reports a rank, alpha or target list that cannot be applied,
// before any workload is known.
func (l LoRA) Validate() error {
	switch {
	case l.Rank < 0 || l.Rank > MaxLoRARank:
		return fmt.Errorf("--lora must be 0 (off) or a rank from 1 to %d, got %d", MaxLoRARank, l.Rank)
	case l.Alpha < 0 || math.IsNaN(l.Alpha) || math.IsInf(l.Alpha, 0):
		return fmt.Errorf("--lora-alpha must be a positive number, got %v", l.Alpha)
	case l.Rank == 0 && (l.Alpha != 0 || l.Targets != ""):
		return errors.New("--lora-alpha and --lora-targets need --lora R (a rank above 0)")
	}
	_, err := l.TargetList()
	return err
}

// TargetList returns the targets as a list, nil for the workload's
// default; an error for an empty name, or AllLinear in a list.
func (l LoRA) TargetList() ([]string, error) {
	if l.Targets == "" {
		return nil, nil
	}
	var out []string
	for _, t := range strings.Split(l.Targets, ",") {
		if t = strings.TrimSpace(t); t == "" {
			return nil, fmt.Errorf("--lora-targets %q has an empty name", l.Targets)
		}
		out = append(out, t)
	}
	if len(out) > 1 && slices.Contains(out, AllLinear) {
		return nil, fmt.Errorf("--lora-targets: %s stands alone, not in a list", AllLinear)
	}
	return out, nil
}

// String describes the setting: "off", or "R=16 α=16 q_proj,v_proj" with
// the targets when they are given.
func (l LoRA) String() string {
	if !l.On() {
		return "off"
	}
	alpha := l.Alpha
	if alpha == 0 {
		alpha = float64(l.Rank)
	}
	s := fmt.Sprintf("R=%d α=%s", l.Rank, strconv.FormatFloat(alpha, 'g', -1, 64))
	if l.Targets != "" {
		s += " " + l.Targets
	}
	return s
}
