package plot

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"gpuz/internal/report"
	"gpuz/internal/units"
)

// panelHeight is the height of one panel of a memory picture.
const panelHeight = 3 * vg.Inch

// idleColor fills the band of memory held but idle.
var idleColor = color.Gray{Y: 0xdd}

// titleHeight is the height of a memory picture's title row.
const titleHeight = 30 // points

// margin is the room a title keeps from the picture's edges.
const margin = 4 // points

// maxColumns bounds the columns a panel draws its points in: a batch of
// thousands of points would draw most of them, its peak among them, as
// hairlines narrower than a pixel, which the eye cannot see reach the
// peak's mark.
const maxColumns = 120

// slotLine draws the edges between paging slots inside their band.
var slotLine = draw.LineStyle{Color: color.White, Width: vg.Points(0.75)}

// RenderMemory draws a plan's memory picture and writes it to w in format
// f (drawMemory).
func RenderMemory(w io.Writer, pic report.MemoryPicture, f Format) error {
	if len(pic.Panels) == 0 {
		return fmt.Errorf("drawing the memory picture: no panel")
	}
	cw, err := NewCanvas(width, memoryHeight(pic), f)
	if err != nil {
		return fmt.Errorf("drawing the memory picture as %s: %w", f, err)
	}
	if err := drawMemory(cw, pic); err != nil {
		return err
	}
	if _, err := cw.WriteTo(w); err != nil {
		return fmt.Errorf("writing the memory picture: %w", err)
	}
	return nil
}

// memoryHeight is the height of pic's image: a panel's height per panel
// and the title's row.
func memoryHeight(pic report.MemoryPicture) vg.Length {
	return panelHeight*vg.Length(len(pic.Panels)) + vg.Points(titleHeight)
}

// drawMemory draws pic on c, width × memoryHeight(pic): a panel per row
// of the plan, one above the other, each the device's memory over the
// batch's points stacked by category (the idle band in grey on top, so
// that the stack's top is the device need; the paging slots' band parted
// into its slots by white lines), the device's capacity and its free
// memory (less --take) as lines, and the peak of the memory in use marked
// with what the need adds to it. A batch of more points than maxColumns
// is drawn in columns, each the point of most memory in use among those
// it covers, so that the peak is as wide as a column. The legend is drawn
// once, right of the panels; the title is centred over the panels when
// it fits there, and every title is set small enough to fit its room.
// The texts' control characters are escaped (escapedPicture).
func drawMemory(c vg.CanvasSizer, pic report.MemoryPicture) error {
	pic = escapedPicture(pic)
	if len(pic.Panels) == 0 {
		return fmt.Errorf("drawing the memory picture: no panel")
	}
	scale, unit := memoryUnit(pic)
	dc := draw.New(c)
	legend := gplot.NewLegend()
	legend.Top, legend.Left = true, true
	plots := make([][]*gplot.Plot, len(pic.Panels))
	named := map[string]bool{} // the legend's entries so far
	for i, panel := range pic.Panels {
		p, err := drawPanel(panel, pic.Categories, pic.SlotBand, scale, unit, named, &legend)
		if err != nil {
			return fmt.Errorf("drawing the memory picture: %s: %w", panel.Title, err)
		}
		plots[i] = []*gplot.Plot{p}
	}
	lw := legend.Rectangle(dc).Max.X - legend.Rectangle(dc).Min.X + vg.Points(12)
	for _, row := range plots {
		row[0].Title.TextStyle = fitted(row[0].Title.TextStyle, row[0].Title.Text, width-lw-2*vg.Points(margin))
	}
	sty := fitted(draw.TextStyle{Color: color.Black, Font: legend.TextStyle.Font, XAlign: draw.XCenter, YAlign: draw.YCenter, Handler: legend.TextStyle.Handler},
		pic.Title, width-2*vg.Points(margin))
	at := vg.Point{X: (width - lw) / 2, Y: dc.Max.Y - vg.Points(titleHeight/2)}
	if half := sty.Width(pic.Title) / 2; at.X-half < vg.Points(margin) || at.X+half > width-vg.Points(margin) {
		at.X, sty.XAlign = vg.Points(margin), draw.XLeft // too wide to centre over the panels
	}
	dc.FillText(sty, at, pic.Title)
	body := draw.Crop(dc, 0, -lw, 0, -vg.Points(titleHeight))
	tiles := draw.Tiles{Rows: len(pic.Panels), Cols: 1, PadY: vg.Points(6)}
	canvases := gplot.Align(plots, tiles, body)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	legend.Draw(draw.Crop(dc, width-lw+vg.Points(6), 0, 0, -vg.Points(titleHeight+6)))
	return nil
}

// fitted returns sty with its font made small enough that text fits in
// room, or sty as it is when it fits.
func fitted(sty draw.TextStyle, text string, room vg.Length) draw.TextStyle {
	if w := sty.Width(text); w > room {
		sty.Font.Size = vg.Length(math.Floor(float64(sty.Font.Size*room/w*10)) / 10)
	}
	return sty
}

// memoryUnit returns the bytes per unit of the pictures' y axes and the
// unit's name: GiB when a capacity or need reaches 1 GiB, else MiB.
func memoryUnit(pic report.MemoryPicture) (float64, string) {
	var top int64
	for _, p := range pic.Panels {
		top = max(top, p.Capacity, p.Need)
	}
	if top >= gib {
		return gib, "GiB"
	}
	return 1 << 20, "MiB"
}

// column is one drawn column of a panel: it covers the points [from, to)
// and draws the bands of point shown, the first of most memory in use
// among them.
type column struct{ from, to, shown int }

// columns divides a panel's n points into at most maxColumns columns of
// near-equal width (one per point when there are no more).
func columns(panel report.MemoryPanel, n int) []column {
	k := min(n, maxColumns)
	cols := make([]column, 0, k)
	for c := range k {
		col := column{from: c * n / k, to: (c + 1) * n / k}
		col.shown = col.from
		var most int64 = -1
		for i := col.from; i < col.to; i++ {
			var in int64
			for _, band := range panel.Bands[:len(panel.Bands)-1] { // all but the idle band
				in += band[i]
			}
			if in > most {
				most, col.shown = in, i
			}
		}
		cols = append(cols, col)
	}
	return cols
}

// drawPanel builds one panel's plot: its bands stacked as steps over the
// columns (the band slotBand parted into panel.Slots), the capacity and
// free lines, and the peak in use marked. It names in legend each band
// and line that named does not hold yet, and adds it there.
func drawPanel(panel report.MemoryPanel, categories []string, slotBand int, scale float64, unit string, named map[string]bool, legend *gplot.Legend) (*gplot.Plot, error) {
	addLegend := func(label string, thumbs ...gplot.Thumbnailer) {
		if !named[label] {
			named[label] = true
			legend.Add(label, thumbs...)
		}
	}
	p := gplot.New()
	p.Title.Text = panel.Title
	p.Y.Label.Text = "device memory (" + unit + ")"
	p.Y.Min = 0
	n := 0
	if len(panel.Bands) > 0 {
		n = len(panel.Bands[0])
	}
	cols := columns(panel, n)
	edges := make([]float64, len(cols)+1)
	for i, c := range cols {
		edges[i], edges[i+1] = float64(c.from), float64(c.to)
	}
	base := make([]int64, len(cols))
	for b, band := range panel.Bands {
		col := plotutil.Color(b)
		if b == len(panel.Bands)-1 {
			col = idleColor
		}
		top := make([]int64, len(cols))
		any := false
		for i, c := range cols {
			top[i] = base[i] + band[c.shown]
			any = any || band[c.shown] != 0
		}
		if any {
			poly, err := plotter.NewPolygon(bandOutline(edges, base, top, scale))
			if err != nil {
				return nil, err
			}
			poly.Color, poly.LineStyle.Width = col, 0
			p.Add(poly)
			addLegend(categories[b], poly)
		}
		if b == slotBand && any {
			if err := addSlotEdges(p, edges, base, panel.Slots, scale); err != nil {
				return nil, err
			}
		}
		base = top
	}
	x1 := float64(n)
	lines := []struct {
		label  string
		y      int64
		dashes []vg.Length
		col    color.Color
	}{
		{"capacity", panel.Capacity, nil, color.Black},
		{"free", panel.Free, []vg.Length{vg.Points(6), vg.Points(3)}, color.RGBA{R: 0xcc, A: 0xff}},
	}
	if panel.Take > 0 {
		lines[1].label = fmt.Sprintf("free, less --take %s", units.Bytes(panel.Take))
	}
	for _, l := range lines {
		line, err := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(l.y) / scale}, {X: x1, Y: float64(l.y) / scale}})
		if err != nil {
			return nil, err
		}
		line.Color, line.Dashes = l.col, l.dashes
		p.Add(line)
		addLegend(l.label, line)
	}
	if err := addPeak(p, panel, cols, n, scale); err != nil {
		return nil, err
	}
	addLegend("peak in use", peakGlyph())
	var ticks []gplot.Tick
	for _, t := range panel.Ticks {
		ticks = append(ticks, gplot.Tick{Value: float64(t.At), Label: t.Label})
	}
	p.X.Tick.Marker = gplot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = 0, x1
	p.Y.Max = yTop(panel) / scale
	p.Add(plotter.NewGrid())
	return p, nil
}

// yTop is the top of a panel's y axis in bytes: a quarter above the
// capacity or the need, room for the peak's two lines of label.
func yTop(panel report.MemoryPanel) float64 {
	return float64(max(panel.Capacity, panel.Need)) * 1.25
}

// peakGlyph is the mark of the peak in use.
func peakGlyph() *plotter.Scatter {
	s, _ := plotter.NewScatter(plotter.XYs{{}})
	s.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(4), Shape: draw.PyramidGlyph{}}
	return s
}

// addPeak marks the peak in use on p, a panel of n points drawn in
// columns cols, at the middle of the column that draws it, labelled with
// its bytes and, when the need is more, the memory allocated but idle
// there that makes up the need (every point's bands sum to the need):
// "peak in use 16.7 GiB" over "+ 1.10 GiB allocated, idle = needs 17.8
// GiB". The label stands above the mark, clear of the capacity and free
// lines, and reads leftwards from a peak in the panel's right half, so
// that it stays over the panel.
func addPeak(p *gplot.Plot, panel report.MemoryPanel, cols []column, n int, scale float64) error {
	x := float64(panel.PeakAt) + 0.5
	for _, c := range cols {
		if panel.PeakAt >= c.from && panel.PeakAt < c.to {
			x = float64(c.from+c.to) / 2
		}
	}
	at := plotter.XYs{{X: x, Y: float64(panel.Peak) / scale}}
	mark := peakGlyph()
	mark.XYs = at
	text := "peak in use " + units.Bytes(panel.Peak)
	if idle := panel.Need - panel.Peak; idle > 0 {
		text += fmt.Sprintf("\n+ %s allocated, idle = needs %s", units.Bytes(idle), units.Bytes(panel.Need))
	}
	// Just above the mark when the lines are well above it (a fifth of
	// the axis holds the label's two lines), else above them.
	over := at
	if lines := max(panel.Capacity, panel.Free); panel.Peak <= lines && float64(lines-panel.Peak) < 0.2*yTop(panel) {
		over = plotter.XYs{{X: x, Y: float64(max(lines, panel.Need)) / scale}}
	}
	label, err := plotter.NewLabels(plotter.XYLabels{XYs: over, Labels: []string{text}})
	if err != nil {
		return err
	}
	label.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(4)}
	if x > float64(n)/2 {
		label.TextStyle[0].XAlign = draw.XRight
		label.Offset.X = -label.Offset.X
	}
	p.Add(mark, label)
	return nil
}

// addSlotEdges draws on p the edges between the paging slots, whose
// band starts at base over the columns edges: a white step line at each
// slot's top but the last's, so that the band reads as its slots (the
// staging buffer last) rather than one block.
func addSlotEdges(p *gplot.Plot, edges []float64, base, slots []int64, scale float64) error {
	var off int64
	for _, s := range slots[:max(len(slots)-1, 0)] {
		off += s
		ys := make([]int64, len(base))
		for i, b := range base {
			ys[i] = b + off
		}
		line, err := plotter.NewLine(steps(edges, ys, scale))
		if err != nil {
			return err
		}
		line.LineStyle = slotLine
		p.Add(line)
	}
	return nil
}

// steps is a step line over the columns edges at heights ys, in units of
// scale bytes: a horizontal segment per run of equal heights.
func steps(edges []float64, ys []int64, scale float64) plotter.XYs {
	var s plotter.XYs
	for i := 0; i < len(ys); {
		j := i
		for j+1 < len(ys) && ys[j+1] == ys[i] {
			j++
		}
		y := float64(ys[i]) / scale
		s = append(s, plotter.XY{X: edges[i], Y: y}, plotter.XY{X: edges[j+1], Y: y})
		i = j + 1
	}
	return s
}

// bandOutline is the outline of a band between base and top, each a step
// over the columns whose edges are edges (column i spans [edges[i],
// edges[i+1])), in units of scale bytes: along the top left to right,
// then back along the base. Runs of equal heights take two vertices.
func bandOutline(edges []float64, base, top []int64, scale float64) plotter.XYs {
	out := steps(edges, top, scale)
	back := steps(edges, base, scale)
	slices.Reverse(back)
	return append(out, back...)
}
