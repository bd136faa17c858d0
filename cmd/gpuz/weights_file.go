package main

import (
	"fmt"
	"slices"
	"strings"

	"gpuz/internal/hfconfig"
	"gpuz/internal/quant"
)

// fileWeights returns the kind a GGUF model's decoder projections are
// stored in (m.Kinds, by transformers' names): the kind a run of the file
// stores them in unless --weights says another. A float kind for a file of
// float projections; an error for a file whose projections mix kinds,
// which gpuz stores in one.
func fileWeights(m hfconfig.Model) (quant.Kind, error) {
	var kinds []quant.Kind
	for name, k := range m.Kinds {
		if strings.HasSuffix(name, "_proj.weight") && !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	switch len(kinds) {
	case 0:
		return quant.F32, nil
	case 1:
		return kinds[0], nil
	}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.String()
	}
	return 0, fmt.Errorf("the file's projections mix %s, and gpuz stores them in one kind: give it with --weights", strings.Join(names, " and "))
}
