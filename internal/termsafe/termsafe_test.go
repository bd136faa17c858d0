package termsafe

import (
	"strings"
	"testing"
)

// TestString checks String on ordinary text (kept) and on hostile text:
// escape sequences, BEL, CR, bidi overrides, a C1 CSI encoded and raw.
func TestString(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "llama-3 8B", "llama-3 8B"},
		{"unicode kept", "H100 — 80 GiB µs ü 東京", "H100 — 80 GiB µs ü 東京"},
		{"empty", "", ""},
		{"clear screen", "a\x1b[2Jb", `a\x1b[2Jb`},
		{"bell", "ding\a", `ding\a`},
		{"carriage return", "ok\rFAIL", `ok\rFAIL`},
		{"newline and tab", "a\nb\tc", `a\nb\tc`},
		{"nul", "a\x00b", `a\x00b`},
		{"del", "a\x7fb", `a\x7fb`},
		{"bidi override", "abc\u202eevil", `abc\u202eevil`},
		{"bidi embedding", "\u202a", `\u202a`},
		{"bidi isolate", "x\u2066y\u2069", `x\u2066y\u2069`},
		{"C1 CSI encoded", "a\u009b2J", `a\u009b2J`},
		{"C1 CSI raw byte", "a\x9b2J", `a\x9b2J`},
		{"invalid utf8", "\xff\xfe", `\xff\xfe`},
		{"backslash kept", `C:\x`, `C:\x`},
		{"LRM kept", "a\u200eb", "a\u200eb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := String(tt.in); got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestStringNoControls checks that no output of String holds a byte or
// rune that String would change: its output is a fixed point.
func TestStringNoControls(t *testing.T) {
	for c := 0; c < 0x3000; c++ {
		in := []string{string(rune(c))}
		if c < 0x100 {
			in = append(in, string([]byte{byte(c)}))
		}
		for _, s := range in {
			out := String(s)
			if firstUnsafe(out) >= 0 {
				t.Fatalf("String(%q) = %q still holds a control character", s, out)
			}
			if unsafe(rune(c)) && out == s {
				t.Fatalf("String(%q) left it unchanged", s)
			}
		}
	}
}

// TestStrings checks that Strings applies String to each element.
func TestStrings(t *testing.T) {
	got := Strings([]string{"a", "\x1b"})
	if len(got) != 2 || got[0] != "a" || got[1] != `\x1b` {
		t.Errorf("Strings = %q", got)
	}
}

// TestShort checks that Short escapes as String does and bounds what it
// shows: a megabyte name is cut to MaxShort bytes and says how long it
// was; the cut falls between characters and escapes, never inside one.
func TestShort(t *testing.T) {
	long := strings.Repeat("a", 1<<20)
	tests := []struct {
		name, in, want string
	}{
		{"short kept", "model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.up_proj.weight"},
		{"escaped", "a\x1b[2Jb", `a\x1b[2Jb`},
		{"exactly the bound", long[:MaxShort], long[:MaxShort]},
		{"one past the bound", long[:MaxShort+1], long[:MaxShort] + "… (257 bytes)"},
		{"a megabyte", long, long[:MaxShort] + "… (1048576 bytes)"},
		{"an escape not split", long[:MaxShort-2] + "\x1b" + long, long[:MaxShort-2] + "… (1048831 bytes)"},
		{"a rune not split", long[:MaxShort-1] + "é" + long, long[:MaxShort-1] + "… (1048833 bytes)"},
		{"escapes past the bound", strings.Repeat("\a", 200), strings.Repeat(`\a`, MaxShort/2) + "… (200 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Short(tt.in); got != tt.want {
				t.Errorf("Short = %.80q… (%d bytes), want %.80q… (%d bytes)", got, len(got), tt.want, len(tt.want))
			}
		})
	}
}
