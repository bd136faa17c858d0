package hfconfig

import "strings"

// PackedParam returns the parameter gpuz builds that holds transformers'
// tensor name, and the first of its rows the tensor fills: a query, key or
// value projection's weight or bias lies in its layer's packed QKV module
// (rows from its Part.Off), a gate or up projection's in the packed Up
// module; any other tensor is its own parameter, from row 0.
func (c Config) PackedParam(name string) (param string, row int) {
	for _, r := range []Role{QKV, Up} {
		p := c.Projection(r)
		if len(p.Parts) < 2 {
			continue
		}
		for _, part := range p.Parts {
			if prefix, suffix, ok := strings.Cut(name, "."+part.Name+"."); ok {
				return prefix + "." + p.Name + "." + suffix, part.Off
			}
		}
	}
	return name, 0
}
