// Command crossover draws the crossover of docs/fit.md: the model's
// predicted epoch time of a small linear training (2 blocks of 2 layers,
// 150 samples in one batch, issue 22's iris-sized workload) in the cuda
// mode on sim:rtx4060-laptop and in the cpu mode on the cpu-i7-13700h host
// profile, against the layers' width, and where the two lines cross. It
// plans each width (nothing runs), prints a table and writes an SVG:
//
//	go run ./scripts/crossover -o docs/fit/crossover.svg
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	vgdraw "gonum.org/v1/plot/vg/draw"

	"gpuz/internal/bench"
	"gpuz/internal/device"
	"gpuz/internal/models"
	"gpuz/internal/perfmodel"
	gpuzplot "gpuz/internal/plot"
)

// widths are the --dims planned, from the iris-sized 16 to the reference's
// 2000.
var widths = []int{16, 32, 64, 128, 256, 512, 768, 1024, 1536, 2000}

func main() {
	out := flag.String("o", "crossover.svg", "the SVG to write")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "crossover:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	gpu, err := perfmodel.Lookup("rtx4060-laptop")
	if err != nil {
		return err
	}
	host, err := perfmodel.LookupHost("cpu-i7-13700h")
	if err != nil {
		return err
	}
	var cuda, cpu plotter.XYs
	fmt.Println("dims  cuda (µs)  cpu (µs)")
	for _, d := range widths {
		c, h, err := predict(d, gpu, host)
		if err != nil {
			return fmt.Errorf("--dims %d: %w", d, err)
		}
		fmt.Printf("%4d  %9.1f  %8.1f\n", d, c*1e6, h*1e6)
		cuda = append(cuda, plotter.XY{X: float64(d), Y: c * 1e6})
		cpu = append(cpu, plotter.XY{X: float64(d), Y: h * 1e6})
	}
	cross, ok := crossing(cuda, cpu)
	if ok {
		fmt.Printf("the lines cross at --dims %.0f\n", cross)
	}
	return draw(out, cuda, cpu, cross, ok)
}

// predict plans the workload at width d and returns the model's epoch
// time in seconds in the cuda mode on gpu and in the cpu mode on host.
func predict(d int, gpu, host perfmodel.Profile) (cuda, cpu float64, err error) {
	cfg, err := models.LinearPreset(models.ScaleSmall)
	if err != nil {
		return 0, 0, err
	}
	cfg.Blocks, cfg.LayersPerBlock, cfg.Dims, cfg.Samples, cfg.Batch = 2, 2, d, 150, 150
	gpuMode, hostMode := bench.ResidentMode(true), bench.ResidentMode(false)
	opts := bench.Options{
		ModelName: "linear", Workload: &cfg, Task: bench.TaskTrain, Modes: []bench.Mode{gpuMode, hostMode},
		Samples: cfg.Samples, Batch: cfg.Batch, Epochs: 2, Warmup: 1,
		Adam: bench.DefaultAdam(), ClipNorm: 1, Seed: 1, Threads: 1, HostProfile: &host,
		NewGPU: func() (device.Device, error) { return device.NewSimProfile(gpu, nil), nil },
	}
	plan, err := bench.PlanMemory(opts, bench.PlanOptions{})
	if err != nil {
		return 0, 0, err
	}
	times := map[bench.Mode]float64{}
	for _, m := range plan.Modes {
		if m.Prediction == nil {
			return 0, 0, fmt.Errorf("%s: no prediction", m.Mode)
		}
		times[m.Mode] = m.Prediction.Model.Seconds()
	}
	return times[gpuMode], times[hostMode], nil
}

// crossing returns the width where b - a changes sign, interpolated
// linearly in log width between the two planned widths around it.
func crossing(a, b plotter.XYs) (float64, bool) {
	for i := 1; i < len(a); i++ {
		d0, d1 := b[i-1].Y-a[i-1].Y, b[i].Y-a[i].Y
		if d0 == 0 {
			return a[i-1].X, true
		}
		if d0*d1 < 0 {
			f := d0 / (d0 - d1)
			return math.Exp(math.Log(a[i-1].X) + f*(math.Log(a[i].X)-math.Log(a[i-1].X))), true
		}
	}
	return 0, false
}

// draw writes the two lines, on log axes, with the crossing marked, to
// out: whole or not at all.
func draw(out string, cuda, cpu plotter.XYs, cross float64, crosses bool) error {
	p := plot.New()
	p.Title.Text = "linear train, 2 blocks × 2 layers, 150 samples: model time per epoch"
	p.X.Label.Text = "--dims (log)"
	p.Y.Label.Text = "predicted µs per epoch (log)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	for i, s := range []struct {
		name string
		xys  plotter.XYs
	}{{"cuda on rtx4060-laptop", cuda}, {"cpu on cpu-i7-13700h", cpu}} {
		l, pts, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return err
		}
		l.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	if crosses {
		line, err := plotter.NewLine(plotter.XYs{{X: cross, Y: cuda[0].Y / 2}, {X: cross, Y: cuda[len(cuda)-1].Y * 2}})
		if err != nil {
			return err
		}
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("they cross at --dims ≈ %.0f", cross), line)
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".crossover-*.svg")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	// gpuz's SVG canvas draws the text as outlines (docs/output.md).
	c, err := gpuzplot.NewCanvas(8*vg.Inch, 5*vg.Inch, gpuzplot.FormatSVG)
	if err == nil {
		p.Draw(vgdraw.New(c))
		_, err = c.WriteTo(tmp)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return os.Rename(tmp.Name(), out)
}
