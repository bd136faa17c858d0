package plot

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	xfont "golang.org/x/image/font"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// NewCanvas returns the canvas a picture of w × h is drawn on in format
// f: for SVG one that draws each string as the outlines of its glyphs
// (outlined), for PNG gonum's image canvas, which draws its text in the
// font gonum laid it out with. Pictures drawn with gonum's plot outside
// this package (scripts/crossover) use it too.
func NewCanvas(w, h vg.Length, f Format) (vg.CanvasWriterTo, error) {
	if f == FormatSVG {
		return outlined{vgsvg.New(w, h)}, nil
	}
	return draw.NewFormattedCanvas(w, h, string(f))
}

// outlined is an SVG canvas that draws each string as the outlines of its
// glyphs, filled, in the font gonum measured it with (Liberation Serif,
// which gonum embeds in the program). An SVG <text> element names a font
// that most systems lack: a viewer would substitute another, wider or
// narrower, and the text would overflow the places laid out for it
// (legends cut, units lost). Outlines render as laid out wherever the
// picture is opened. Each string is also written as a transparent <text>
// element, so that it can still be searched and copied.
type outlined struct {
	*vgsvg.Canvas
}

// FillString draws s from pt on its baseline: the transparent text, then
// the glyphs' outlines in the current colour.
func (c outlined) FillString(f font.Face, pt vg.Point, s string) {
	c.Canvas.FillString(f, pt, s)
	if p := glyphs(f, pt, s); len(p) > 0 {
		c.Canvas.Fill(p)
	}
}

// WriteTo writes the SVG document with its <text> elements made
// transparent: the outlines drawn beside them are what shows.
func (c outlined) WriteTo(w io.Writer) (int64, error) {
	var buf bytes.Buffer
	if _, err := c.Canvas.WriteTo(&buf); err != nil {
		return 0, err
	}
	n, err := w.Write(bytes.ReplaceAll(buf.Bytes(), []byte("<text "), []byte(`<text fill-opacity="0" `)))
	return int64(n), err
}

// glyphs returns the outlines of s's glyphs in face f, set from pt on the
// baseline with the advances and kerning that font.Face.Width sums, so
// that they cover exactly the width gonum laid out.
func glyphs(f font.Face, pt vg.Point, s string) vg.Path {
	var (
		buf sfnt.Buffer
		// As font.Face.Width: a size of the units per em in 26.6 fixed
		// point gives every figure in font units.
		ppem  = fixed.Int26_6(f.Face.UnitsPerEm())
		scale = f.Font.Size / vg.Length(ppem)
		x     vg.Length
		path  vg.Path
		prev  sfnt.GlyphIndex
	)
	at := func(p fixed.Point26_6) vg.Point {
		// sfnt's y grows downwards, vg's upwards.
		return vg.Point{X: pt.X + x + vg.Length(p.X)*scale, Y: pt.Y - vg.Length(p.Y)*scale}
	}
	for i, r := range s {
		idx, err := f.Face.GlyphIndex(&buf, r)
		if err != nil {
			panic(fmt.Errorf("plot: the glyph of %q: %w", r, err))
		}
		if i > 0 {
			kern, err := f.Face.Kern(&buf, prev, idx, ppem, xfont.HintingNone)
			switch {
			case err == nil:
				x += vg.Length(kern) * scale
			case !errors.Is(err, sfnt.ErrNotFound):
				panic(fmt.Errorf("plot: kerning %q: %w", s, err))
			}
		}
		segs, err := f.Face.LoadGlyph(&buf, idx, ppem, nil)
		if err != nil {
			panic(fmt.Errorf("plot: the outline of %q: %w", r, err))
		}
		for j, seg := range segs {
			switch seg.Op {
			case sfnt.SegmentOpMoveTo:
				if j > 0 {
					path.Close()
				}
				path.Move(at(seg.Args[0]))
			case sfnt.SegmentOpLineTo:
				path.Line(at(seg.Args[0]))
			case sfnt.SegmentOpQuadTo:
				path.QuadTo(at(seg.Args[0]), at(seg.Args[1]))
			case sfnt.SegmentOpCubeTo:
				path.CubeTo(at(seg.Args[0]), at(seg.Args[1]), at(seg.Args[2]))
			}
		}
		if len(segs) > 0 {
			path.Close()
		}
		adv, err := f.Face.GlyphAdvance(&buf, idx, ppem, xfont.HintingNone)
		if err != nil {
			panic(fmt.Errorf("plot: the advance of %q: %w", r, err))
		}
		x += vg.Length(adv) * scale
		prev = idx
	}
	return path
}
