package bench

import (
	"image/color"
	"io"
	"math"
	"strconv"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot is a line chart, drawn as SVG (SVG) or PNG (PNG) with
// gonum.org/v1/plot: axes with ticks and labels, a title, and a legend in
// a column to the right of the plot area.
type Plot struct {
	Title, XLabel, YLabel string
	// XLog draws the x axis in powers of two (buffer and file sizes);
	// its ticks are labelled with XFormat, or the number.
	XLog    bool
	XFormat func(float64) string
	Series  []Series
	Legend  []LegendEntry
}

// Series is one line of a plot. Points with a NaN y are left out, and
// the line is broken there.
type Series struct {
	Color  color.RGBA
	Dash   Dash
	Points []Point
}

// Point is one point of a series.
type Point struct{ X, Y float64 }

// LegendEntry is a line of the legend: a label and the look of a line.
type LegendEntry struct {
	Label string
	Color color.RGBA
	Dash  Dash
}

// Dash is a line style.
type Dash int

// The line styles.
const (
	Solid Dash = iota
	Dashed
	Dotted
	DashDot
)

// pattern returns the on/off lengths of d in pixels; nil is solid.
func (d Dash) pattern() []float64 {
	switch d {
	case Dashed:
		return []float64{9, 5}
	case Dotted:
		return []float64{2, 4}
	case DashDot:
		return []float64{9, 4, 2, 4}
	}
	return nil
}

// Palette is the colours of successive series values.
var Palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
	{0xff, 0x7f, 0x0e, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff},
	{0xe3, 0x77, 0xc2, 0xff}, {0x17, 0xbe, 0xcf, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
}

// The geometry of a plot, in pixels of a 96 dpi PNG (an SVG is the same
// size in CSS pixels).
const (
	plotDPI              = 96
	plotW, plotH         = 900, 560
	legendW              = 200 // the legend's column, right of the plot
	lineWidth            = 2
	markerRadius         = 3
	fontSize, titleSize  = 13, 16
	tickSize, tickLength = 12, 5
)

var (
	black = color.RGBA{0, 0, 0, 0xff}
	grey  = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
)

// px returns n pixels as a vg length.
func px(n float64) vg.Length { return vg.Length(n) * vg.Inch / plotDPI }

// sans is the plots' typeface: Liberation Sans, which gonum/plot embeds.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// layout is a plot's scales and ticks.
type layout struct {
	xmin, xmax, ymax float64 // xmin and xmax are exponents of two with XLog
	xticks, yticks   []float64
	xlog             bool
}

// layout computes the scales: y from 0 to a round number above the
// largest y; x over the points' range.
func (p *Plot) layout() layout {
	l := layout{xmin: math.Inf(1), xmax: math.Inf(-1), xlog: p.XLog}
	ymax := 0.0
	for _, s := range p.Series {
		for _, pt := range s.Points {
			if !l.drawn(pt) {
				continue
			}
			l.xmin, l.xmax = min(l.xmin, pt.X), max(l.xmax, pt.X)
			ymax = max(ymax, pt.Y)
		}
	}
	if math.IsInf(l.xmin, 0) {
		l.xmin, l.xmax = 0, 1
		if p.XLog {
			l.xmin, l.xmax = 1, 2
		}
	}
	if p.XLog {
		l.xmin, l.xmax = math.Log2(l.xmin), math.Log2(l.xmax)
		if l.xmax-l.xmin < 1 {
			l.xmin, l.xmax = math.Floor(l.xmin), math.Floor(l.xmin)+1
		}
		step := math.Ceil((l.xmax - l.xmin + 1) / 10) // at most ~10 labels
		for e := math.Ceil(l.xmin); e <= l.xmax+1e-9; e += step {
			l.xticks = append(l.xticks, e)
		}
	} else {
		if l.xmin > 0 && l.xmin < l.xmax/3 {
			l.xmin = 0 // start at the origin when the data nearly do
		}
		if l.xmax == l.xmin {
			l.xmax = l.xmin + 1
		}
		l.xticks = niceTicks(l.xmin, l.xmax, 8)
		l.xmin, l.xmax = min(l.xmin, l.xticks[0]), max(l.xmax, l.xticks[len(l.xticks)-1])
	}
	if ymax <= 0 {
		ymax = 1
	}
	l.yticks = niceTicks(0, ymax, 6)
	l.ymax = l.yticks[len(l.yticks)-1]
	return l
}

// drawn reports whether pt is drawn: a finite y, and a positive x on a
// log axis.
func (l layout) drawn(pt Point) bool {
	return !math.IsNaN(pt.Y) && !math.IsInf(pt.Y, 0) && !(l.xlog && pt.X <= 0)
}

// niceTicks returns ticks at a step of 1, 2 or 5 × 10^k covering lo..hi,
// about n of them.
func niceTicks(lo, hi float64, n int) []float64 {
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []float64
	for v := math.Floor(lo/step) * step; ; v += step {
		ticks = append(ticks, math.Round(v/step)*step)
		if v >= hi-step*1e-9 {
			break
		}
	}
	return ticks
}

// xValue returns the data value of an x of the layout.
func (l layout) xValue(x float64) float64 {
	if l.xlog {
		return math.Exp2(x)
	}
	return x
}

func (p *Plot) xLabel(v float64) string {
	if p.XFormat != nil {
		return p.XFormat(v)
	}
	return formatNum(v)
}

// formatNum renders a tick value without trailing zeros.
func formatNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// segments splits a series at its points that are not drawn into runs.
func (l layout) segments(s Series) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for _, pt := range s.Points {
		if !l.drawn(pt) {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, plotter.XY{X: pt.X, Y: pt.Y})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// lineStyle returns the look of a series' line.
func lineStyle(c color.RGBA, d Dash) draw.LineStyle {
	ls := draw.LineStyle{Color: c, Width: px(lineWidth)}
	for _, v := range d.pattern() {
		ls.Dashes = append(ls.Dashes, px(v))
	}
	return ls
}

// build returns p as a gonum plot and its legend, which is drawn apart,
// right of the plot. Each run of a series between left-out points is a
// line of its own, with a circle at each point.
func (p *Plot) build() (*plot.Plot, plot.Legend) {
	l := p.layout()
	gp := plot.New()
	gp.BackgroundColor = nil // draw fills the whole canvas
	gp.Title.Text = p.Title
	gp.Title.TextStyle.Font = font.From(font.Font{Typeface: sans.Typeface, Variant: sans.Variant, Weight: xfont.WeightBold}, px(titleSize))
	gp.Title.Padding = px(12)
	gp.X.Label.Text, gp.Y.Label.Text = p.XLabel, p.YLabel
	grid := plotter.NewGrid()
	grid.Vertical = draw.LineStyle{Color: grey, Width: px(1)}
	grid.Horizontal = grid.Vertical
	gp.Add(grid)
	for _, s := range p.Series {
		for _, seg := range l.segments(s) {
			gp.Add(&plotter.Line{XYs: seg, LineStyle: lineStyle(s.Color, s.Dash)},
				&plotter.Scatter{XYs: seg, GlyphStyle: draw.GlyphStyle{Color: s.Color, Radius: px(markerRadius), Shape: draw.CircleGlyph{}}})
		}
	}
	var xticks, yticks plot.ConstantTicks
	for _, t := range l.xticks {
		xticks = append(xticks, plot.Tick{Value: l.xValue(t), Label: p.xLabel(l.xValue(t))})
	}
	for _, t := range l.yticks {
		yticks = append(yticks, plot.Tick{Value: t, Label: formatNum(t)})
	}
	gp.X.Min, gp.X.Max = l.xValue(l.xmin), l.xValue(l.xmax)
	gp.Y.Min, gp.Y.Max = 0, l.ymax
	if l.xlog {
		gp.X.Scale = plot.LogScale{}
	}
	gp.X.Tick.Marker, gp.Y.Tick.Marker = xticks, yticks
	for _, a := range []*plot.Axis{&gp.X, &gp.Y} {
		a.Padding = 0
		a.Label.TextStyle.Font = font.From(sans, px(fontSize))
		a.Tick.Label.Font = font.From(sans, px(tickSize))
		a.Tick.Length = px(tickLength)
	}

	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font = font.From(sans, px(fontSize))
	legend.ThumbnailWidth = px(30)
	legend.Padding = px(4)
	for _, e := range p.Legend {
		legend.Add(e.Label, &plotter.Line{LineStyle: lineStyle(e.Color, e.Dash)})
	}
	return gp, legend
}

// draw draws p on c: the plot, and the legend in the column right of it.
func (p *Plot) draw(c vg.CanvasWriterTo, w io.Writer) error {
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	gp, legend := p.build()
	gp.Draw(draw.Crop(dc, px(10), -px(legendW), px(10), -px(15)))
	legend.Draw(draw.Crop(dc, px(plotW-legendW+15), 0, 0, -px(55)))
	_, err := c.WriteTo(w)
	return err
}

// SVG writes the plot as a standalone SVG document. Its text names
// Liberation Sans; the fonts are not embedded.
func (p *Plot) SVG(w io.Writer) error {
	return p.draw(vgsvg.New(px(plotW), px(plotH)), w)
}

// PNG writes the plot as a PNG image of plotW×plotH pixels.
func (p *Plot) PNG(w io.Writer) error {
	c := vgimg.NewWith(vgimg.UseWH(px(plotW), px(plotH)), vgimg.UseDPI(plotDPI))
	return p.draw(vgimg.PngCanvas{Canvas: c}, w)
}
