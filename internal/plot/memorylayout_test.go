package plot

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgsvg"

	"gpuz/internal/report"
)

// textBox is where a string is drawn: from its baseline's start, as wide
// as its font's metrics make it, from its descent to its ascent.
type textBox struct {
	s        string
	min, max vg.Point
	rotated  bool
}

// boxCanvas is an SVG canvas that records each string's box, from the
// metrics of the font gonum lays the string out with (the one the
// outlines are drawn in): no renderer is needed to see where it falls.
type boxCanvas struct {
	*vgsvg.Canvas
	rotations []bool // per Push: whether a rotation is in effect
	rotated   bool
	boxes     []textBox
}

func (c *boxCanvas) Push() {
	c.rotations = append(c.rotations, c.rotated)
	c.Canvas.Push()
}

func (c *boxCanvas) Pop() {
	c.rotated = c.rotations[len(c.rotations)-1]
	c.rotations = c.rotations[:len(c.rotations)-1]
	c.Canvas.Pop()
}

func (c *boxCanvas) Rotate(rad float64) {
	c.rotated = c.rotated || rad != 0
	c.Canvas.Rotate(rad)
}

func (c *boxCanvas) FillString(f font.Face, pt vg.Point, s string) {
	e := f.Extents()
	c.boxes = append(c.boxes, textBox{s: s, rotated: c.rotated,
		min: vg.Point{X: pt.X, Y: pt.Y - e.Descent}, max: vg.Point{X: pt.X + f.Width(s), Y: pt.Y + e.Ascent}})
	c.Canvas.FillString(f, pt, s)
}

// drawnBoxes draws pic and returns its strings' boxes and its size.
func drawnBoxes(t *testing.T, pic report.MemoryPicture) ([]textBox, vg.Point) {
	t.Helper()
	h := memoryHeight(pic)
	c := &boxCanvas{Canvas: vgsvg.New(width, h)}
	if err := drawMemory(c, pic); err != nil {
		t.Fatal(err)
	}
	return c.boxes, vg.Point{X: width, Y: h}
}

// longPicture is the hand-made picture with the titles of a long model
// name and device, and a peak at the last point of the first panel, far
// below the need (a long second line of its label at the right edge).
func longPicture() report.MemoryPicture {
	pic := memoryPicture
	pic.Title = "Memory plan of gpuz llm " + strings.Repeat("a-very-long-snapshot-directory-name-", 4) + " train (scale custom, fused attention): 18 blocks, batch 1"
	pic.Panels = append([]report.MemoryPanel(nil), pic.Panels...)
	p := pic.Panels[0]
	p.Title = "cache, window-paged 3/18, recompute none on sim:/home/someone/profiles/a-laptop-card-profile.json: needs 8.51 GiB"
	p.Bands = [][]int64{
		{1 << 30, 1 << 30, 1 << 30, 1 << 30, 1 << 30, 1 << 30},
		{0, 0, 0, 0, 0, 1 << 30},
		{0, 0, 0, 0, 0, 0},
		{7 << 30, 7 << 30, 7 << 30, 7 << 30, 7 << 30, 6 << 30},
	}
	p.Peak, p.PeakAt = 2<<30, 5
	pic.Panels[0] = p
	return pic
}

// TestMemoryTextsInside checks, from the font's metrics, that every
// string of a memory picture lies inside the image (issue 44 item 14:
// the title's first letter was cut, "emory plan"): the plan's title of a
// long model name, the panels' titles, the ticks, the legend, the peak's
// label at the right edge. Rotated strings (the y axis's label) are
// left out.
func TestMemoryTextsInside(t *testing.T) {
	for name, pic := range map[string]report.MemoryPicture{"hand-made": memoryPicture, "long names": longPicture()} {
		boxes, size := drawnBoxes(t, pic)
		if len(boxes) == 0 {
			t.Fatalf("%s: no string drawn", name)
		}
		title := false
		for _, b := range boxes {
			title = title || b.s == pic.Title
			if b.rotated {
				continue
			}
			if b.min.X < 0 || b.min.Y < 0 || b.max.X > size.X || b.max.Y > size.Y {
				t.Errorf("%s: %q drawn in [%.1f, %.1f]×[%.1f, %.1f], outside the image's %.0f × %.0f", name, b.s,
					b.min.X, b.max.X, b.min.Y, b.max.Y, size.X, size.Y)
			}
		}
		if !title {
			t.Errorf("%s: the title was not drawn whole", name)
		}
	}
}

// TestMemoryPeakExplained checks the peak's label: the bytes in use, and
// what the need adds to them, allocated but idle (issue 44 item 14: an
// unexplained gap between "peak in use" and "needs").
func TestMemoryPeakExplained(t *testing.T) {
	var svg bytes.Buffer
	if err := RenderMemory(&svg, memoryPicture, FormatSVG); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"peak in use 6.00 GiB", "+ 2.00 GiB allocated, idle = needs 8.00 GiB", "peak in use 4.00 GiB"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("no %q drawn", want)
		}
	}
	if strings.Contains(svg.String(), "+ 0 B allocated") {
		t.Error("a peak that is the need says 0 B more")
	}
}

// TestMemoryColumns checks that a batch of many points is drawn in at
// most maxColumns columns, each the point of most memory in use it
// covers, so that a one-point peak is a column wide (issue 44 item 14:
// it was a hairline the stack visibly did not reach), and that a short
// batch keeps a column per point.
func TestMemoryColumns(t *testing.T) {
	const n = 10_000
	panel := report.MemoryPanel{Bands: [][]int64{make([]int64, n), make([]int64, n)}, PeakAt: 7777}
	for i := range n {
		panel.Bands[0][i], panel.Bands[1][i] = int64(i%7), 100
	}
	panel.Bands[0][7777] = 50
	cols := columns(panel, n)
	if len(cols) != maxColumns || cols[0].from != 0 || cols[len(cols)-1].to != n {
		t.Fatalf("%d columns over [%d, %d), want %d over [0, %d)", len(cols), cols[0].from, cols[len(cols)-1].to, maxColumns, n)
	}
	for i, c := range cols {
		if i > 0 && c.from != cols[i-1].to {
			t.Fatalf("column %d starts at %d, the one before ends at %d", i, c.from, cols[i-1].to)
		}
		if c.from <= 7777 && 7777 < c.to && c.shown != 7777 {
			t.Errorf("the peak's column [%d, %d) draws point %d", c.from, c.to, c.shown)
		}
		if c.shown < c.from || c.shown >= c.to || panel.Bands[0][c.shown] != 6 && c.shown != 7777 && c.to-c.from >= 7 {
			t.Errorf("column [%d, %d) draws point %d (%d in use), not its most", c.from, c.to, c.shown, panel.Bands[0][c.shown])
		}
	}
	if got := columns(panel, 6); len(got) != 6 || fmt.Sprint(got[5]) != fmt.Sprint(column{5, 6, 5}) {
		t.Errorf("6 points: columns %v, want one per point", got)
	}
}

// TestMemorySlotsParted checks that the paging slots' band is drawn
// parted into its slots (issue 44 item 14: one solid block): a white
// line between each two of three slots and the staging buffer, in each
// panel that pages, none in one that does not.
func TestMemorySlotsParted(t *testing.T) {
	pic := memoryPicture
	pic.Categories = []string{"weights", "paging slots", "temporaries", "allocated, idle"}
	pic.SlotBand = 1
	pic.Panels = append([]report.MemoryPanel(nil), pic.Panels...)
	pic.Panels[0].Slots = []int64{1 << 29, 1 << 29, 1 << 29, 1 << 29} // sums to the band's 2 GiB at its most: the bands are hand-made
	var svg bytes.Buffer
	if err := RenderMemory(&svg, pic, FormatSVG); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(strings.ToLower(svg.String()), "stroke:#ffffff"); got != 3 {
		t.Errorf("%d white slot edges drawn, want 3 (four parts, the second panel none)", got)
	}
}
