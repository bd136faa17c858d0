package plot

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
)

// inkBounds returns the bounds of img's pixels that are not transparent
// (alpha at least a quarter).
func inkBounds(img image.Image) image.Rectangle {
	var r image.Rectangle
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if _, _, _, a := img.At(x, y).RGBA(); a >= 0x4000 {
				r = r.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	return r
}

// TestSVGTextRendersAsLaidOut draws strings of the pictures on an SVG
// canvas at 12 points from x = 20 pt on a baseline 30 pt down, renders
// the SVG with librsvg's rsvg-convert (a common rasteriser; the test is
// skipped without it) at 72 dpi, a pixel a point, and checks that the
// ink spans the width gonum laid out for the string (font.Face.Width),
// within 1.5 pixels at either end (the glyphs' side bearings). Drawn as an
// SVG <text>, the string is rendered in whatever font the system has for
// Liberation Serif (DejaVu Serif where it lacks it: 15-20% wider, the
// overflow of issue 36, item 18).
func TestSVGTextRendersAsLaidOut(t *testing.T) {
	rsvg, err := exec.LookPath("rsvg-convert")
	if err != nil {
		t.Skip("rsvg-convert not installed (Debian: librsvg2-bin)")
	}
	face := font.DefaultCache.Lookup(gplot.DefaultFont, 12)
	for _, s := range []string{"free device memory (GiB)", "cache auto policy, 2 blocks (mean, 95% CI)", "WAVE 1.29 MiB"} {
		t.Run(s, func(t *testing.T) {
			c, err := NewCanvas(400, 50, FormatSVG)
			if err != nil {
				t.Fatal(err)
			}
			// vgsvg's y axis points up from the bottom: 30 pt down is 20 up.
			c.FillString(face, vg.Point{X: 20, Y: 20}, s)
			var svg bytes.Buffer
			if _, err := c.WriteTo(&svg); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			in, out := filepath.Join(dir, "text.svg"), filepath.Join(dir, "text.png")
			if err := os.WriteFile(in, svg.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			if msg, err := exec.Command(rsvg, "--dpi-x", "72", "--dpi-y", "72", "-o", out, in).CombinedOutput(); err != nil {
				t.Fatalf("rsvg-convert: %v: %s", err, msg)
			}
			f, err := os.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatal(err)
			}
			ink, lo, hi := inkBounds(img), 20.0, 20+face.Width(s).Points()
			if ink.Empty() || abs(float64(ink.Min.X)-lo) > 1.5 || abs(float64(ink.Max.X)-hi) > 1.5 {
				t.Errorf("ink from x = %d to %d px, laid out from %.1f to %.1f", ink.Min.X, ink.Max.X, lo, hi)
			}
		})
	}
}

// abs is |v|.
func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
