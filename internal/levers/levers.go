// Package levers names the ways to trade time for device memory that apply
// to any placement: recomputing activations in the backward pass instead
// of keeping them, storing values in 16 bits (half precision), and
// accumulating gradients over micro-batches. Each
// lever is a small named type with the values a flag accepts, and every
// lever's setting is one value, Set; a run applies it where it builds the
// workload, the plan and fit enumerate it, the flags parse it. Adding a
// lever is a type here with its values, a field of Set, and its transform:
// the engine's (engine.Spec) or the model's (models.Apply).
package levers

import (
	"fmt"
	"strings"
)

// Recompute says which activations a training schedule keeps for the
// backward pass and which it computes again there.
type Recompute string

// The recompute settings.
const (
	// RecomputeNone keeps every activation the backward pass reads, from
	// the forward pass to its use.
	RecomputeNone Recompute = "none"
	// RecomputeBlocks keeps only each block's input: just before a block's
	// gradients, the backward pass runs the block's forward again from that
	// input (torch.utils.checkpoint's semantics, per block).
	RecomputeBlocks Recompute = "blocks"
)

// Recomputes returns every recompute setting, the default first.
func Recomputes() []Recompute { return []Recompute{RecomputeNone, RecomputeBlocks} }

// ParseRecompute reads a recompute setting as a flag gives it.
func ParseRecompute(s string) (Recompute, error) { return parse("recompute", s, Recomputes()) }

// Setting returns r, RecomputeNone for "" (the zero value, as an unset
// field holds it).
func (r Recompute) Setting() Recompute {
	if r == "" {
		return RecomputeNone
	}
	return r
}

// On reports whether r recomputes anything; "" is RecomputeNone.
func (r Recompute) On() bool { return r == RecomputeBlocks }

// Validate reports a setting that is not one of Recomputes; "" is
// RecomputeNone.
func (r Recompute) Validate() error { return validate("recompute", r, Recomputes()) }

// String returns the setting's name; "" reads as none.
func (r Recompute) String() string { return string(r.Setting()) }

// parse returns the one of values named s, or an error naming the lever
// (what) and the values.
func parse[T ~string](what, s string, values []T) (T, error) {
	for _, v := range values {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("unknown %s %q (want %s)", what, s, names(values))
}

// validate reports a setting v that is not one of values; "", the zero
// value, is the default and valid.
func validate[T ~string](what string, v T, values []T) error {
	if v == "" {
		return nil
	}
	_, err := parse(what, string(v), values)
	return err
}

// names joins values as "a or b", "a, b or c".
func names[T ~string](values []T) string {
	s := make([]string, len(values))
	for i, v := range values {
		s[i] = string(v)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
