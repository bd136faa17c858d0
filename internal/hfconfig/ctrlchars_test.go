package hfconfig

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestModelTypeErrorEscapesControls checks that a config's unsupported
// model_type reaches the error quoted, its control characters escaped (the
// error goes to the terminal): ESC [2J, BEL, CR, a bidi override, C1 CSI.
func TestModelTypeErrorEscapesControls(t *testing.T) {
	for _, s := range []string{"x\x1b[2J", "x\a", "x\r", "x\u202e", "x\u009b2J"} {
		data, _ := json.Marshal(map[string]string{"model_type": s})
		_, err := Parse(data)
		if err == nil {
			t.Fatalf("model_type %q: no error", s)
		}
		if strings.ContainsAny(err.Error(), "\x1b\a\r\u202e\u009b") {
			t.Errorf("model_type %q: the error holds it raw: %q", s, err)
		}
	}
}

// TestConfigValuesBounded checks that a config's value quoted in an error
// is escaped and bounded (issue 44 item 2): a megabyte model_type, a
// hidden_act holding a C1 CSI and a bidi override, a size given as a
// megabyte string.
func TestConfigValuesBounded(t *testing.T) {
	long := strings.Repeat("z", 1<<20)
	for _, tc := range []struct {
		name, config, want string
	}{
		{"model_type", `{"model_type": "` + long + `"}`, `model_type "zzzz`},
		{"hidden_act", strings.Replace(llamaJSON, `"silu"`, `"x\u009b2J\u202e"`, 1), `hidden_act "x\u009b2J\u202e" is not supported`},
		{"a size", strings.Replace(llamaJSON, `"hidden_size": 64`, `"hidden_size": "`+long+`"`, 1), `hidden_size must be an integer, got "zzzz`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.config))
			if err == nil {
				t.Fatal("Parse accepted it")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || len(msg) > 1000 || strings.ContainsAny(msg, "\u009b\u202e") {
				t.Errorf("error %.300q (%d bytes); want one line under 1000 bytes containing %q, escaped", msg, len(msg), tc.want)
			}
		})
	}
}
