package plot

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Format is the image format of a plot: svg or png.
type Format string

// The formats a plot is written in.
const (
	FormatSVG Format = "svg"
	FormatPNG Format = "png"
)

// FormatOf returns the format that path's extension names (.svg or .png,
// in any case).
func FormatOf(path string) (Format, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg":
		return FormatSVG, nil
	case ".png":
		return FormatPNG, nil
	case "":
		return "", fmt.Errorf("%s has no extension: give a .svg or .png file", path)
	default:
		return "", fmt.Errorf("%s: unknown image format %q (want .svg or .png)", path, ext)
	}
}

// The size of the image.
const (
	width  = 8 * vg.Inch
	height = 5 * vg.Inch
)

// Render draws c and writes it to w in format f, its texts' control
// characters escaped (Chart.escaped). A sweep's legend goes to the right
// of the axes, where it hides no line, band or failed point.
func Render(w io.Writer, c Chart, f Format) error {
	p, err := c.escaped().plot()
	if err != nil {
		return fmt.Errorf("drawing the plot: %w", err)
	}
	cw, err := NewCanvas(width, height, f)
	if err != nil {
		return fmt.Errorf("drawing the plot as %s: %w", f, err)
	}
	dc := draw.New(cw)
	if len(c.Bars) > 0 {
		p.Draw(dc)
	} else {
		legend := p.Legend
		p.Legend = gplot.NewLegend()
		legend.Top, legend.Left = true, true
		r := legend.Rectangle(dc)
		lw := r.Max.X - r.Min.X + vg.Points(12)
		p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
		legend.Draw(draw.Crop(dc, width-lw+vg.Points(6), 0, 0, -vg.Points(36)))
	}
	if _, err := cw.WriteTo(w); err != nil {
		return fmt.Errorf("writing the plot: %w", err)
	}
	return nil
}

// plot builds the gonum plot of c.
func (c Chart) plot() (*gplot.Plot, error) {
	p := gplot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	p.Y.Min = 0
	if len(c.Bars) > 0 {
		return p, c.drawBars(p)
	}
	return p, c.drawSweep(p)
}

// errorBars are points with asymmetric errors, for plotter.NewYErrorBars.
type errorBars struct {
	plotter.XYs
	plotter.YErrors
}

// add appends a point at x with iv's mean and interval, if it has one.
func (e *errorBars) add(x float64, iv Interval) {
	if !iv.HasCI() {
		return
	}
	e.XYs = append(e.XYs, plotter.XY{X: x, Y: iv.Mean})
	e.YErrors = append(e.YErrors, struct{ Low, High float64 }{iv.Mean - iv.Lo, iv.Hi - iv.Mean})
}

// addTo adds the error bars in colour col to p, if there are any.
func (e *errorBars) addTo(p *gplot.Plot, col color.Color) error {
	if len(e.XYs) == 0 {
		return nil
	}
	bars, err := plotter.NewYErrorBars(e)
	if err != nil {
		return err
	}
	bars.Color = col
	p.Add(bars)
	return nil
}

// failedGlyph is the marker of a mode without timed epochs.
func failedGlyph(col color.Color) draw.GlyphStyle {
	return draw.GlyphStyle{Color: col, Radius: vg.Points(5), Shape: draw.CrossGlyph{}}
}

// drawBars draws a run: a bar per mode with its interval, a labelled cross
// at zero for a mode without timed epochs.
func (c Chart) drawBars(p *gplot.Plot) error {
	values := make(plotter.Values, len(c.Bars))
	names := make([]string, len(c.Bars))
	var errs errorBars
	var failed plotter.XYs
	var labels plotter.XYLabels
	for i, b := range c.Bars {
		names[i] = b.Label
		x := float64(i)
		if b.Missing {
			failed = append(failed, plotter.XY{X: x})
			labels.XYs = append(labels.XYs, plotter.XY{X: x})
			labels.Labels = append(labels.Labels, b.Status)
			continue
		}
		values[i] = b.Mean
		errs.add(x, b.Interval)
		if b.Status != "ok" {
			labels.XYs = append(labels.XYs, plotter.XY{X: x, Y: b.Mean})
			labels.Labels = append(labels.Labels, b.Status)
		}
	}
	bars, err := plotter.NewBarChart(values, vg.Points(40))
	if err != nil {
		return err
	}
	bars.Color = plotutil.Color(0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	if err := errs.addTo(p, color.Black); err != nil {
		return err
	}
	if len(failed) > 0 {
		s, err := plotter.NewScatter(failed)
		if err != nil {
			return err
		}
		s.GlyphStyle = failedGlyph(color.Black)
		p.Add(s)
	}
	if len(labels.XYs) > 0 {
		l, err := plotter.NewLabels(labels)
		if err != nil {
			return err
		}
		l.Offset = vg.Point{X: vg.Points(8), Y: vg.Points(4)}
		p.Add(l)
	}
	p.NominalX(names...)
	p.Y.Max = c.top()
	return nil
}

// top is the top of the y axis: a tenth above the highest mean or
// interval bound (1 when there is none).
func (c Chart) top() float64 {
	hi := 0.0
	c.eachInterval(func(iv *Interval) {
		hi = max(hi, iv.Mean)
		if iv.HasCI() {
			hi = max(hi, iv.Hi)
		}
	})
	if hi <= 0 {
		return 1
	}
	return hi * 1.1
}

// drawSweep draws a sweep: a line with error bars per mode, crosses at the
// top of the axis where a mode has no timed epoch, and a shaded band per
// cpu band.
func (c Chart) drawSweep(p *gplot.Plot) error {
	top := c.top()
	p.Y.Max = top
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, l := range c.Lines {
		for _, pt := range l.Points {
			xmin, xmax = min(xmin, pt.X), max(xmax, pt.X)
		}
		for _, f := range l.Failures {
			xmin, xmax = min(xmin, f.X), max(xmax, f.X)
		}
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax = 0, 1
	}
	if xmin == xmax {
		xmin, xmax = xmin-0.5, xmax+0.5
	}
	for i, b := range c.Bands {
		if err := drawBand(p, b, xmin, xmax, plotutil.Color(len(c.Lines)+i)); err != nil {
			return err
		}
	}
	var statuses []string
	for i, l := range c.Lines {
		col := plotutil.Color(i)
		if len(l.Points) > 0 {
			xys := make(plotter.XYs, len(l.Points))
			var errs errorBars
			for j, pt := range l.Points {
				xys[j] = plotter.XY{X: pt.X, Y: pt.Mean}
				errs.add(pt.X, pt.Interval)
			}
			line, points, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			line.Color = col
			points.Color, points.Shape = col, plotutil.Shape(i)
			p.Add(line, points)
			p.Legend.Add(l.Label, line, points)
			if err := errs.addTo(p, col); err != nil {
				return err
			}
		}
		if len(l.Failures) > 0 {
			xys := make(plotter.XYs, len(l.Failures))
			for j, f := range l.Failures {
				xys[j] = plotter.XY{X: f.X, Y: top}
				if !slices.Contains(statuses, f.Status) {
					statuses = append(statuses, f.Status)
				}
			}
			s, err := plotter.NewScatter(xys)
			if err != nil {
				return err
			}
			s.GlyphStyle = failedGlyph(col)
			p.Add(s)
			if len(l.Points) == 0 {
				// A mode that failed everywhere still names its colour.
				p.Legend.Add(l.Label+" (no timed epochs)", s)
			}
		}
	}
	for _, st := range statuses {
		s, err := plotter.NewScatter(plotter.XYs{})
		if err != nil {
			return err
		}
		s.GlyphStyle = failedGlyph(color.Black)
		p.Legend.Add(st, s)
	}
	p.Add(plotter.NewGrid())
	return nil
}

// drawBand draws a cpu band from xmin to xmax: its mean as a dashed
// line, its interval shaded.
func drawBand(p *gplot.Plot, b Band, xmin, xmax float64, col color.Color) error {
	line, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: b.Mean}, {X: xmax, Y: b.Mean}})
	if err != nil {
		return err
	}
	line.Color = col
	line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	label := b.Label + " (mean)"
	if b.HasCI() {
		poly, err := plotter.NewPolygon(plotter.XYs{
			{X: xmin, Y: b.Lo}, {X: xmax, Y: b.Lo}, {X: xmax, Y: b.Hi}, {X: xmin, Y: b.Hi},
		})
		if err != nil {
			return err
		}
		r, g, bl, _ := col.RGBA()
		poly.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(bl >> 8), A: 0x40}
		poly.LineStyle.Width = 0
		p.Add(poly)
		p.Legend.Add(b.Label+" (mean, 95% CI)", line, poly)
	} else {
		p.Legend.Add(label, line)
	}
	p.Add(line)
	return nil
}
