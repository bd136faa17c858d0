package plot

import (
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"image"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"

	"gpuz/internal/report"
)

// ticks mark the hand-made picture's passes.
var ticks = []report.PictureTick{{At: 0, Label: "forward"}, {At: 3, Label: "backward and updates"}, {At: 6, Label: "end of the batch"}}

// memoryPicture is a hand-made picture of two panels over six points (a
// forward pass of three steps, a backward pass of two and an update):
// the second panel, as with recompute, saves less and holds a temporary
// that comes and goes (the sawtooth), on 4 GiB of a 16 GiB device with 2
// GiB taken.
var memoryPicture = report.MemoryPicture{
	Title:      "Memory plan of gpuz linear train (scale small): 2 blocks, batch 4",
	Categories: []string{"weights", "saved activations", "temporaries", "allocated, idle"},
	Panels: []report.MemoryPanel{
		{
			Title: "cuda, resident, recompute none on sim:16GiB: needs 8.00 GiB",
			Bands: [][]int64{
				{1 << 30, 1 << 30, 1 << 30, 1 << 30, 1 << 30, 1 << 30},
				{0, 2 << 30, 4 << 30, 4 << 30, 2 << 30, 0},
				{1 << 30, 1 << 30, 1 << 30, 1 << 30, 1 << 30, 0},
				{6 << 30, 4 << 30, 2 << 30, 2 << 30, 4 << 30, 7 << 30},
			},
			Capacity: 16 << 30, Free: 14 << 30, Take: 2 << 30, Need: 8 << 30, Peak: 6 << 30, PeakAt: 2,
			Ticks: ticks,
		},
		{
			Title: "cuda, resident, recompute blocks on sim:16GiB: needs 4.00 GiB",
			Bands: [][]int64{
				{1 << 30, 1 << 30, 1 << 30, 1 << 30, 1 << 30, 1 << 30},
				{0, 1 << 30, 1 << 30, 1 << 30, 0, 0},
				{1 << 30, 0, 1 << 30, 2 << 30, 1 << 30, 0},
				{2 << 30, 2 << 30, 1 << 30, 0, 2 << 30, 3 << 30},
			},
			Capacity: 16 << 30, Free: 14 << 30, Take: 2 << 30, Need: 4 << 30, Peak: 4 << 30, PeakAt: 3,
			Ticks: ticks,
		},
	},
}

// TestBandOutline: a band's outline runs along its top, left to right, a
// step per run of equal heights, and back along its base.
func TestBandOutline(t *testing.T) {
	got := bandOutline([]float64{0, 1, 2, 3, 4}, []int64{0, 0, 1, 1}, []int64{2, 2, 2, 3}, 1)
	want := plotter.XYs{
		{X: 0, Y: 2}, {X: 3, Y: 2}, {X: 3, Y: 3}, {X: 4, Y: 3}, // the top
		{X: 4, Y: 1}, {X: 2, Y: 1}, {X: 2, Y: 0}, {X: 0, Y: 0}, // the base, back
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("outline %v, want %v", got, want)
	}
}

// svgStructure lists what an SVG draws, without coordinates: each text
// (its glyphs' outlines, the path after it, left out), and each other
// path as its fill or stroke with its number of vertices. A text drawn as
// an SVG <text> rather than as outlines fails the test.
func svgStructure(t *testing.T, svg []byte) string {
	t.Helper()
	var b strings.Builder
	dec := xml.NewDecoder(bytes.NewReader(svg))
	// A string is a transparent <text> followed by its glyphs' outlines
	// (a path; none for blanks): the text stands for both.
	inText, glyphsNext := false, false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			attr := func(name string) string {
				for _, a := range el.Attr {
					if a.Name.Local == name {
						return a.Value
					}
				}
				return ""
			}
			switch el.Name.Local {
			case "text":
				inText = attr("fill-opacity") == "0"
				if !inText {
					t.Errorf("a <text> element drawn as text, not as outlines")
				}
			case "path":
				if glyphsNext {
					glyphsNext = false
					continue
				}
				style := attr("style")
				if i := strings.Index(style, ";stroke-width"); i >= 0 {
					style = style[:i]
				}
				fmt.Fprintf(&b, "path %s, %d vertices\n", style, strings.Count(attr("d"), "L")+1)
			}
		case xml.CharData:
			if inText {
				fmt.Fprintf(&b, "text %q\n", string(el))
				glyphsNext = strings.TrimSpace(string(el)) != ""
			}
		case xml.EndElement:
			inText = false
		}
	}
	return b.String()
}

// TestRenderMemory draws the hand-made picture as SVG and checks its
// structure against testdata/memory.svg.golden (go test -update rewrites
// it): the title, each panel's title and ticks, a filled outline per
// non-empty band with as many vertices as its steps need, the capacity and
// free lines, the peak's mark and label, and the legend, each band and
// line named once. The PNG decodes to an image of the same aspect.
func TestRenderMemory(t *testing.T) {
	var svg, png bytes.Buffer
	if err := RenderMemory(&svg, memoryPicture, FormatSVG); err != nil {
		t.Fatal(err)
	}
	got := svgStructure(t, svg.Bytes())
	golden(t, "memory.svg.golden", got)
	for _, want := range []string{"peak in use 6.00 GiB", "peak in use 4.00 GiB", "free, less --take 2.00 GiB"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q drawn", want)
		}
	}
	if err := RenderMemory(&png, memoryPicture, FormatPNG); err != nil {
		t.Fatal(err)
	}
	img, format, err := image.Decode(&png)
	if err != nil || format != "png" {
		t.Fatalf("PNG %q, error %v", format, err)
	}
	// 8 inches wide, 3 per panel and 30 points of title high.
	aspect, want := float64(img.Bounds().Dy())/float64(img.Bounds().Dx()), (2*3*72+30)/(8*72.0)
	if math.Abs(aspect-want) > 0.01 {
		t.Errorf("PNG of height/width %.3f, want %.3f: a panel's height per panel", aspect, want)
	}
	if err := RenderMemory(io.Discard, report.MemoryPicture{}, FormatSVG); err == nil {
		t.Error("a picture without panels drawn")
	}
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden checks got against testdata/name; -update writes got there.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update && os.WriteFile(path, []byte(got), 0o644) != nil {
		t.Fatalf("cannot write %s", path)
	}
	if want, err := os.ReadFile(path); err != nil || string(want) != got {
		t.Errorf("%s: %v, or it differs from what was drawn (go test -update rewrites it):\n%s", path, err, got)
	}
}
