package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"gpuz/internal/results"
)

// evil is a name with control characters, as a results file or a model's
// config.json may hold: ESC (a terminal's colour sequence), BEL, a C1 CSI
// and a bidi override.
const evil = "lin\x1b[31mear\a\u009b\u202e"

// TestRenderEscapesControls draws charts and a memory picture whose names
// hold control characters (issue 36 item 8: the SVG held them raw, invalid
// XML that a viewer refuses): every SVG parses as XML to its end, holds no
// control character but the markup's own newlines and tabs, and shows the
// names escaped.
func TestRenderEscapesControls(t *testing.T) {
	doc := func(name string, edit func(*results.Doc)) func(t *testing.T) []byte {
		return func(t *testing.T) []byte {
			d, err := ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			edit(&d)
			c, err := Build(d)
			if err != nil {
				t.Fatal(err)
			}
			var svg bytes.Buffer
			if err := Render(&svg, c, FormatSVG); err != nil {
				t.Fatal(err)
			}
			return svg.Bytes()
		}
	}
	for _, tt := range []struct {
		name string
		svg  func(t *testing.T) []byte
	}{
		{"a run's model", doc("run.json", func(d *results.Doc) { d.Header.Model = evil })},
		{"a run's mode and status", doc("run.json", func(d *results.Doc) {
			d.Modes[1].Mode, d.Modes[1].Status.Kind = evil, results.StatusKind("OOM"+evil)
		})},
		{"a sweep's mode", doc("take_sweep.json", func(d *results.Doc) {
			for i := range d.Rows {
				d.Rows[i].Result.Modes[0].Mode = evil
			}
		})},
		{"a memory picture's titles and ticks", func(t *testing.T) []byte {
			pic := memoryPicture
			pic.Title = evil
			pic.Panels = append(pic.Panels[:0:0], pic.Panels...)
			pic.Panels[0].Title = evil
			var svg bytes.Buffer
			if err := RenderMemory(&svg, pic, FormatSVG); err != nil {
				t.Fatal(err)
			}
			return svg.Bytes()
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			svg := tt.svg(t)
			dec := xml.NewDecoder(bytes.NewReader(svg))
			for {
				if _, err := dec.Token(); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatalf("the SVG is not XML: %v", err)
				}
			}
			if i := bytes.IndexFunc(svg, func(r rune) bool {
				return r != '\n' && r != '\t' && (r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0x202a && r <= 0x202e)
			}); i >= 0 {
				t.Errorf("a control character drawn raw: %q", svg[max(i-20, 0):min(i+20, len(svg))])
			}
			if !strings.Contains(string(svg), `lin\x1b[31mear\a`) {
				t.Errorf("the name is not shown escaped")
			}
		})
	}
}
