package report

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/poolkit/poolkit/benches/internal/results"
)

var (
	poolkitColor  = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	baselineColor = color.RGBA{R: 0x88, G: 0x88, B: 0x88, A: 0xff}
	otherColor    = color.RGBA{R: 0xe0, G: 0x8a, B: 0x2c, A: 0xff}
	inkColor      = color.RGBA{A: 0xff}
)

// rangeBars draws one horizontal bar per contender from its best round to
// its slowest, a tick at the median, and a dot at the best round: filled,
// or hollow where the contender is indistinguishable from the baseline.
type rangeBars struct {
	sums []results.Summary // top to bottom on the chart is last to first
}

func (r rangeBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmax = 0
	for _, s := range r.sums {
		if !math.IsNaN(s.Slowest) {
			xmax = max(xmax, s.Slowest)
		}
	}
	if xmax == 0 {
		xmax = 1
	}
	return 0, xmax * 1.05, -0.6, float64(len(r.sums)) - 0.4
}

// logScaleAbove is the ratio of the slowest to the fastest figure above
// which a chart uses a log scale.
const logScaleAbove = 20

// minBest is the fastest best round, or 0 if there is none.
func (r rangeBars) minBest() float64 {
	lo := math.Inf(1)
	for _, s := range r.sums {
		if !math.IsNaN(s.Best) && s.Best > 0 {
			lo = min(lo, s.Best)
		}
	}
	if math.IsInf(lo, 1) {
		return 0
	}
	return lo
}

// nanoTicks labels the ticks of another Ticker as durations: "250 ns".
type nanoTicks struct{ inner plot.Ticker }

func (t nanoTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := t.inner.Ticks(lo, hi)
	for i := range ticks {
		switch {
		case ticks[i].Label == "":
		case ticks[i].Value == 0:
			ticks[i].Label = "0"
		default:
			ticks[i].Label = results.Nanos(ticks[i].Value)
		}
	}
	return ticks
}

func (r rangeBars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	h := vg.Points(7)
	for i, s := range r.sums {
		if math.IsNaN(s.Best) {
			continue
		}
		y := trY(float64(i))
		x0, x1 := trX(s.Best), trX(s.Slowest)
		x1 = max(x1, x0+vg.Points(1))
		fill := otherColor
		switch {
		case s.Baseline:
			fill = baselineColor
		case strings.HasPrefix(s.Name, "poolkit"):
			fill = poolkitColor
		}
		bar := []vg.Point{{X: x0, Y: y - h}, {X: x1, Y: y - h}, {X: x1, Y: y + h}, {X: x0, Y: y + h}}
		c.FillPolygon(fill, c.ClipPolygonXY(bar))
		xm := trX(s.Median)
		c.StrokeLine2(draw.LineStyle{Color: inkColor, Width: vg.Points(1.5)}, xm, y-h*1.5, xm, y+h*1.5)
		var shape draw.GlyphDrawer = draw.CircleGlyph{}
		if s.Indistinguishable {
			shape = draw.RingGlyph{}
		}
		c.DrawGlyph(draw.GlyphStyle{Color: inkColor, Radius: vg.Points(3.5), Shape: shape}, vg.Point{X: x0, Y: y})
	}
}

// writeChart draws the chart of c into path (an .svg file).
func writeChart(c results.Case, path string) error {
	sums := c.Summaries()
	// The first contender goes on top: nominal Y ticks count from the bottom.
	rev := make([]results.Summary, len(sums))
	names := make([]string, len(sums))
	for i, s := range sums {
		rev[len(sums)-1-i] = s
		names[len(sums)-1-i] = s.Name
		if c.Fairness {
			names[len(sums)-1-i] = fmt.Sprintf("%s\nJain %s, min/max %s", s.Name, results.Ratio(s.Jain), results.Ratio(s.MinMax))
		}
	}
	p := plot.New()
	p.Title.Text = c.Name
	p.X.Label.Text = "ns/op: bar from best to slowest round, tick at the median,\ndot at the best round (hollow: indistinguishable from " + c.Baseline + ")"
	p.NominalY(names...)
	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil // no lines between contenders
	bars := rangeBars{sums: rev}
	p.Add(grid, bars)
	_, xmax, ymin, ymax := bars.DataRange()
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, xmax, ymin, ymax
	p.X.Tick.Marker = nanoTicks{plot.DefaultTicks{}}
	// Contenders that differ by orders of magnitude (a pool and make) share
	// a chart on a log scale.
	if lo := bars.minBest(); lo > 0 && xmax/lo > logScaleAbove {
		p.X.Min = lo / 1.5
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = nanoTicks{plot.LogTicks{}}
		p.X.Label.Text = "ns/op, log scale: bar from best to slowest round, tick at the median,\ndot at the best round (hollow: indistinguishable from " + c.Baseline + ")"
	}
	perRow := 28
	if c.Fairness {
		perRow = 36 // two-line labels
	}
	height := vg.Points(float64(perRow*len(sums) + 110))
	return p.Save(7*vg.Inch, height, path)
}
