// Package termsafe makes text that came from a file or another process
// safe to print on a terminal: its control characters (C0, DEL, C1, and
// the Unicode bidirectional overrides and isolates) are written as Go's
// %q escapes would write them, so that a name cannot clear the screen,
// move the cursor, ring the bell or reorder the line it is printed in.
// Ordinary Unicode is kept as is. Apply it where such text is printed or
// put into an error, never where it is stored: files stay byte-exact.
package termsafe

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// unsafe reports whether r must not reach a terminal raw: a C0 control
// (U+0000–U+001F), DEL (U+007F), a C1 control (U+0080–U+009F), a bidi
// embedding or override (U+202A–U+202E) or a bidi isolate (U+2066–U+2069).
func unsafe(r rune) bool {
	return r < 0x20 || r >= 0x7f && r <= 0x9f ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// String returns s with each control character escaped as Go's %q
// escapes it (\x1b, \a, \r, \u009b, \u202e), and each byte that is not
// valid UTF-8 as \xNN (a raw 0x9b byte is a CSI to an 8-bit terminal). A
// string with none of them is returned unchanged.
func String(s string) string {
	out, _ := escape(s, -1)
	return out
}

// MaxShort is the most bytes of a string Short shows: room for any real
// tensor, shard or file name, and a bound on a hostile one.
const MaxShort = 256

// Short returns String(s) for a message, bounded: when the escaped text
// is longer than MaxShort bytes, its first MaxShort bytes (cut between
// characters and escapes, never inside one) and then "… (N bytes)", N
// being the length of s. A name in a file can be a megabyte long; a
// message that quotes it stays one readable line.
func Short(s string) string {
	out, cut := escape(s, MaxShort)
	if cut {
		out += "… (" + strconv.Itoa(len(s)) + " bytes)"
	}
	return out
}

// escape returns s escaped as String describes, stopping before the
// escaped text would pass limit bytes (no limit when limit < 0); cut
// reports whether it stopped before the end of s.
func escape(s string, limit int) (out string, cut bool) {
	i := firstUnsafe(s)
	if i < 0 && (limit < 0 || len(s) <= limit) {
		return s, false
	}
	if i < 0 {
		i = len(s)
	}
	var b strings.Builder
	if limit >= 0 && i > limit {
		i = limit
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		return s[:i], true
	}
	if limit < 0 {
		b.Grow(len(s) + 8)
	}
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		piece := s[i : i+n]
		switch {
		case r == utf8.RuneError && n == 1:
			piece = `\x` + hex2(s[i])
		case unsafe(r):
			q := strconv.QuoteRune(r) // 'X' with X the escape
			piece = q[1 : len(q)-1]
		}
		if limit >= 0 && b.Len()+len(piece) > limit {
			return b.String(), true
		}
		b.WriteString(piece)
		i += n
	}
	return b.String(), false
}

// Strings returns a copy of ss with String applied to each.
func Strings(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = String(s)
	}
	return out
}

// firstUnsafe returns the index of the first byte of s that String must
// change, or -1 if there is none.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || unsafe(r) {
			return i
		}
		i += n
	}
	return -1
}

// hex2 is the two lower-case hex digits of c.
func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}
