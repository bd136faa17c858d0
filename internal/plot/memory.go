package plot

import (
	"fmt"
	"image/color"
	"io"

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

// RenderMemory draws a plan's memory picture and writes it to w in format
// f: a panel per row of the plan, one above the other, each the device's
// memory over the batch's points stacked by category (the idle band in
// grey on top, so that the stack's top is the device need), the device's
// capacity and its free memory (less --take) as lines, and the peak of
// the memory in use marked. The legend is drawn once, right of the panels.
// The texts' control characters are escaped (escapedPicture).
func RenderMemory(w io.Writer, pic report.MemoryPicture, f Format) error {
	pic = escapedPicture(pic)
	if len(pic.Panels) == 0 {
		return fmt.Errorf("drawing the memory picture: no panel")
	}
	scale, unit := memoryUnit(pic)
	cw, err := NewCanvas(width, panelHeight*vg.Length(len(pic.Panels))+vg.Points(30), f)
	if err != nil {
		return fmt.Errorf("drawing the memory picture as %s: %w", f, err)
	}
	dc := draw.New(cw)
	legend := gplot.NewLegend()
	legend.Top, legend.Left = true, true
	plots := make([][]*gplot.Plot, len(pic.Panels))
	named := map[string]bool{} // the legend's entries so far
	for i, panel := range pic.Panels {
		p, err := drawPanel(panel, pic.Categories, scale, unit, named, &legend)
		if err != nil {
			return fmt.Errorf("drawing the memory picture: %s: %w", panel.Title, err)
		}
		plots[i] = []*gplot.Plot{p}
	}
	lw := legend.Rectangle(dc).Max.X - legend.Rectangle(dc).Min.X + vg.Points(12)
	title := dc
	title.Rectangle.Min.Y = title.Rectangle.Max.Y - vg.Points(30)
	title.FillText(draw.TextStyle{Color: color.Black, Font: legend.TextStyle.Font, XAlign: draw.XCenter, YAlign: draw.YCenter, Handler: legend.TextStyle.Handler},
		vg.Point{X: (width - lw) / 2, Y: title.Rectangle.Max.Y - vg.Points(15)}, pic.Title)
	body := draw.Crop(dc, 0, -lw, 0, -vg.Points(30))
	tiles := draw.Tiles{Rows: len(pic.Panels), Cols: 1, PadY: vg.Points(6)}
	canvases := gplot.Align(plots, tiles, body)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	legend.Draw(draw.Crop(dc, width-lw+vg.Points(6), 0, 0, -vg.Points(36)))
	if _, err := cw.WriteTo(w); err != nil {
		return fmt.Errorf("writing the memory picture: %w", err)
	}
	return nil
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

// drawPanel builds one panel's plot: its bands stacked as steps over the
// points, the capacity and free lines, and the peak in use marked. It
// names in legend each band and line that named does not hold yet, and
// adds it there.
func drawPanel(panel report.MemoryPanel, categories []string, scale float64, unit string, named map[string]bool, legend *gplot.Legend) (*gplot.Plot, error) {
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
	base := make([]int64, n)
	for c, band := range panel.Bands {
		col := plotutil.Color(c)
		if c == len(panel.Bands)-1 {
			col = idleColor
		}
		top := make([]int64, n)
		any := false
		for i := range n {
			top[i] = base[i] + band[i]
			any = any || band[i] != 0
		}
		if any {
			poly, err := plotter.NewPolygon(bandOutline(base, top, scale))
			if err != nil {
				return nil, err
			}
			poly.Color, poly.LineStyle.Width = col, 0
			p.Add(poly)
			addLegend(categories[c], poly)
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
	peak := plotter.XYs{{X: float64(panel.PeakAt) + 0.5, Y: float64(panel.Peak) / scale}}
	mark, err := plotter.NewScatter(peak)
	if err != nil {
		return nil, err
	}
	mark.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(4), Shape: draw.PyramidGlyph{}}
	label, err := plotter.NewLabels(plotter.XYLabels{XYs: peak, Labels: []string{"peak in use " + units.Bytes(panel.Peak)}})
	if err != nil {
		return nil, err
	}
	label.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(4)}
	p.Add(mark, label)
	addLegend("peak in use", mark)
	var ticks []gplot.Tick
	for _, t := range panel.Ticks {
		ticks = append(ticks, gplot.Tick{Value: float64(t.At), Label: t.Label})
	}
	p.X.Tick.Marker = gplot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = 0, x1
	p.Y.Max = float64(max(panel.Capacity, panel.Need)) / scale * 1.05
	p.Add(plotter.NewGrid())
	return p, nil
}

// bandOutline is the outline of a band between base and top, each a step
// over the points (point i spans [i, i+1)), in units of scale bytes: along
// the top left to right, then back along the base. Runs of equal heights
// take two vertices.
func bandOutline(base, top []int64, scale float64) plotter.XYs {
	var out plotter.XYs
	steps := func(ys []int64, reverse bool) plotter.XYs {
		var s plotter.XYs
		for i := 0; i < len(ys); {
			j := i
			for j+1 < len(ys) && ys[j+1] == ys[i] {
				j++
			}
			y := float64(ys[i]) / scale
			s = append(s, plotter.XY{X: float64(i), Y: y}, plotter.XY{X: float64(j + 1), Y: y})
			i = j + 1
		}
		if reverse {
			for l, r := 0, len(s)-1; l < r; l, r = l+1, r-1 {
				s[l], s[r] = s[r], s[l]
			}
		}
		return s
	}
	out = append(out, steps(top, false)...)
	return append(out, steps(base, true)...)
}
