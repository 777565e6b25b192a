package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// Colours of the charts: poolkit's family (the pool, bytepool,
// pgxmanager) in one, the floor in grey, every other contender in another.
var (
	poolkitColor = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	floorColor   = color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}
	otherColor   = color.RGBA{R: 0xe0, G: 0x8a, B: 0x2c, A: 0xff}
	inkColor     = color.RGBA{A: 0xff}
)

// poolkitFamily reports whether a contender is poolkit's: the pool and
// bytepool (named "poolkit…") or pgxmanager (named "pgxmanager…").
func poolkitFamily(name string) bool {
	return strings.HasPrefix(name, "poolkit") || strings.HasPrefix(name, "pgxmanager")
}

// fillOf is the colour of a contender's bar.
func fillOf(name string, floor bool) color.Color {
	switch {
	case floor:
		return floorColor
	case poolkitFamily(name):
		return poolkitColor
	}
	return otherColor
}

// The charts' text is set in Liberation Sans, whose metrics gonum/plot
// lays the text out with; the SVG names it with Arial and Helvetica, which
// share its metrics, and the generic sans-serif after them, so that a viewer
// without Liberation draws the labels about the same width. Embedding the
// font would add some 550 KB to every chart.
const (
	svgFamily   = "font-family:Liberation Sans;"
	svgFamilies = "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"
)

// sans is the charts' font at size points.
func sans(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
}

// chartWidth is the width of every chart.
const chartWidth = 7 * vg.Inch

// bar is one contender's row of a chart: the range of its rounds, the
// median, and whether the rank test tells it from poolkit.
type bar struct {
	name           string
	lo, median, hi float64
	fill           color.Color
	// mark is the glyph at the median: a filled dot where the rank test
	// tells the contender from poolkit, a ring where it does not, a square
	// for poolkit itself.
	mark draw.GlyphDrawer
}

// rangeBars draws one horizontal bar per contender from lo to hi, a tick
// and a glyph at the median.
type rangeBars struct {
	bars []bar // bottom to top
}

func (r rangeBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	for _, b := range r.bars {
		if !math.IsNaN(b.hi) {
			xmax = max(xmax, b.hi)
		}
	}
	if xmax == 0 {
		xmax = 1
	}
	return 0, xmax * 1.05, -0.6, float64(len(r.bars)) - 0.4
}

// minLo is the smallest positive lo, or 0 if there is none.
func (r rangeBars) minLo() float64 {
	lo := math.Inf(1)
	for _, b := range r.bars {
		if b.lo > 0 {
			lo = min(lo, b.lo)
		}
	}
	if math.IsInf(lo, 1) {
		return 0
	}
	return lo
}

func (r rangeBars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	h := vg.Points(7)
	for i, b := range r.bars {
		if math.IsNaN(b.lo) {
			continue
		}
		y := trY(float64(i))
		x0, x1 := trX(b.lo), trX(b.hi)
		x1 = max(x1, x0+vg.Points(1))
		poly := []vg.Point{{X: x0, Y: y - h}, {X: x1, Y: y - h}, {X: x1, Y: y + h}, {X: x0, Y: y + h}}
		c.FillPolygon(b.fill, c.ClipPolygonXY(poly))
		xm := trX(b.median)
		c.StrokeLine2(draw.LineStyle{Color: inkColor, Width: vg.Points(1.5)}, xm, y-h*1.5, xm, y+h*1.5)
		c.DrawGlyph(draw.GlyphStyle{Color: inkColor, Radius: vg.Points(3.5), Shape: b.mark}, vg.Point{X: xm, Y: y})
	}
}

// markOf is the glyph of a contender (see bar.mark).
func markOf(s results.Summary) draw.GlyphDrawer {
	switch {
	case s.Reference:
		return draw.SquareGlyph{}
	case s.Vs != nil && !s.Vs.Differs:
		return draw.RingGlyph{} // no difference found, or too few rounds to look
	}
	return draw.CircleGlyph{}
}

// barsOf makes the bars of c, bottom to top (the first contender on top):
// ns/op per round, or for an end-to-end case requests/s.
func barsOf(c results.Case) []bar {
	sums := c.Summaries()
	out := make([]bar, len(sums))
	for i, s := range sums {
		b := bar{name: s.Name, lo: s.Best, median: s.Median, hi: s.Slowest, fill: fillOf(s.Name, s.Floor), mark: markOf(s)}
		if isE2E(c) {
			b.lo, b.median, b.hi = 1e9/s.Slowest, s.OpsPerSec, 1e9/s.Best
		}
		if c.Fairness {
			b.name = fmt.Sprintf("%s\nJain %s, min/max %s", s.Name, results.Ratio(s.Jain), results.Ratio(s.MinMax))
		}
		out[len(sums)-1-i] = b
	}
	return out
}

// chartSVG draws the chart of c.
func chartSVG(c results.Case) ([]byte, error) {
	bars := rangeBars{bars: barsOf(c)}
	names := make([]string, len(bars.bars))
	for i, b := range bars.bars {
		names[i] = b.name
	}
	unit, format := "ns/op", results.Nanos
	if isE2E(c) {
		unit, format = "requests/s", func(x float64) string { return results.Rate(x) + "/s" }
	}
	p := newPlot(c.Name + "\n" + chartKey)
	p.X.Label.Text = unit
	p.NominalY(names...)
	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil // no lines between contenders
	p.Add(grid, bars)
	_, xmax, ymin, ymax := bars.DataRange()
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, xmax, ymin, ymax
	p.X.Tick.Marker = niceTicks{format: format}
	// Contenders that differ by orders of magnitude (a pool and make) share
	// a chart on a log scale.
	if lo := bars.minLo(); lo > 0 && xmax/lo > logScaleAbove {
		p.X.Min, p.X.Max = lo/1.5, xmax*1.15 // room for the last label
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = niceTicks{format: format, log: true}
		p.X.Label.Text = unit + ", log scale"
	}
	perRow := 28
	if c.Fairness {
		perRow = 36 // two-line labels
	}
	return renderSVG(p, chartWidth, vg.Points(float64(perRow*len(names)+135)))
}

// chartKey is the second and third lines of every bar chart's title. (It is not the
// axis label: gonum/plot places a centred axis label by the arithmetic mean
// of the axis range, which on a log scale lies near its right end, and
// squeezes the plot to make room.)
const chartKey = "bar: the rounds, slowest to fastest; line: the median\n■ poolkit  ● differs from poolkit  ○ no difference found"

// logScaleAbove is the ratio of the largest to the smallest figure above
// which a chart uses a log scale.
const logScaleAbove = 20

// newPlot is a plot with the charts' fonts and margins, titled title.
func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(11)
	p.X.Label.TextStyle.Font = sans(10)
	p.Y.Label.TextStyle.Font = sans(10)
	p.X.Tick.Label.Font = sans(9)
	p.Y.Tick.Label.Font = sans(10)
	p.Legend.TextStyle.Font = sans(10)
	return p
}

// chartMargin is the blank border left around every chart, wide enough that
// a viewer's fallback font, some 10% wider than Liberation Sans, keeps its
// labels inside.
const chartMargin = 14

// renderSVG draws p at w × h inside a blank margin and returns the SVG,
// its font named by families (svgFamilies).
func renderSVG(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	c, err := draw.NewFormattedCanvas(w, h, "svg")
	if err != nil {
		return nil, err
	}
	dc := draw.New(c)
	// The white background covers the whole chart, margin included.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	p.BackgroundColor = nil
	p.Draw(draw.Crop(dc, chartMargin, -chartMargin, chartMargin, -chartMargin))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(b.Bytes(), []byte(svgFamily), []byte(svgFamilies)), nil
}

// niceTicks labels an axis at round values: 1, 2 or 5 times a power of ten,
// from four to eight of them on a linear axis, and every 1, 2 and 5 of each
// decade on a log axis (every 1 where that would crowd it), each labelled
// by format.
type niceTicks struct {
	format func(float64) string
	log    bool
}

func (t niceTicks) Ticks(lo, hi float64) []plot.Tick {
	var vals []float64
	if t.log {
		vals = logTicks(lo, hi)
	} else {
		vals = linearTicks(lo, hi)
	}
	ticks := make([]plot.Tick, 0, len(vals))
	for _, v := range vals {
		label := t.format(v)
		if v == 0 {
			label = "0"
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
	}
	return ticks
}

// linearTicks returns round values from lo to hi, at least three of them,
// the last no nearer hi than half a step, so that its centred label stays
// within the axis.
func linearTicks(lo, hi float64) []float64 {
	if !(hi > lo) {
		return []float64{lo}
	}
	for step := niceStep((hi - lo) / 5); ; step = smallerStep(step) {
		var out []float64
		for v := math.Ceil(lo/step) * step; v <= hi-step/2+step*1e-9; v += step {
			out = append(out, roundTo(v, step))
		}
		if len(out) >= 3 {
			return out
		}
	}
}

// smallerStep is the round step below step: 5 → 2 → 1 → 0.5.
func smallerStep(step float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(step)+1e-9))
	switch m := math.Round(step / p); m {
	case 5:
		return 2 * p
	case 2:
		return p
	}
	return p / 2
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if x <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// roundTo removes the float error of v, a multiple of step.
func roundTo(v, step float64) float64 {
	return math.Round(v/step) * step
}

// logTicks returns round values between lo and hi for a log axis, at most
// maxLogTicks of them: 1, 2 and 5 times each power of ten, else 1 and 3,
// else the powers of ten, else every other one.
func logTicks(lo, hi float64) []float64 {
	for _, mults := range [][]float64{{1, 2, 5}, {1, 3}, {1}} {
		if out := logMultiples(lo, hi, mults, 1); len(out) <= maxLogTicks {
			return out
		}
	}
	for every := 2.0; ; every++ {
		if out := logMultiples(lo, hi, []float64{1}, every); len(out) <= maxLogTicks {
			return out
		}
	}
}

// maxLogTicks bounds the labels of a log axis, so that they never touch.
const maxLogTicks = 7

// logMultiples returns m × 10^e within [lo, hi] for each m of mults and
// every e divisible by every.
func logMultiples(lo, hi float64, mults []float64, every float64) []float64 {
	var out []float64
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		if math.Mod(e, every) != 0 {
			continue
		}
		for _, m := range mults {
			if v := m * math.Pow(10, e); v >= lo && v <= hi {
				out = append(out, v)
			}
		}
	}
	return out
}
