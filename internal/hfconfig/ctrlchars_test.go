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
