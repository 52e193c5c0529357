package bench

import (
	"bufio"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Plot is a line chart, drawn as SVG (SVG) or PNG (PNG) with the standard
// library only: axes with ticks and labels, a title and a legend.
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

// The geometry of a plot, in pixels.
const (
	plotW, plotH                = 900, 560
	plotLeft, plotRight         = 80, 690 // the plot area; the legend is to its right
	plotTop, plotBottom         = 50, 500
	legendX                     = 710
	tickLen                     = 5
	textScale                   = 2 // PNG font pixels per glyph pixel
	markerRadius        float64 = 3
)

var (
	black = color.RGBA{0, 0, 0, 0xff}
	grey  = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	white = color.RGBA{0xff, 0xff, 0xff, 0xff}
)

// layout is a plot's scales and ticks.
type layout struct {
	xmin, xmax, ymax float64
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
			if math.IsNaN(pt.Y) || math.IsInf(pt.Y, 0) || (p.XLog && pt.X <= 0) {
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

// px maps a data x to a pixel column.
func (l layout) px(x float64) float64 {
	if l.xlog {
		x = math.Log2(x)
	}
	return plotLeft + (x-l.xmin)/(l.xmax-l.xmin)*(plotRight-plotLeft)
}

// py maps a data y to a pixel row.
func (l layout) py(y float64) float64 {
	return plotBottom - y/l.ymax*(plotBottom-plotTop)
}

// xTickValue returns the data value of an x tick.
func (l layout) xTickValue(t float64) float64 {
	if l.xlog {
		return math.Exp2(t)
	}
	return t
}

func (p *Plot) xLabel(v float64) string {
	if p.XFormat != nil {
		return p.XFormat(v)
	}
	return formatNum(v)
}

// formatNum renders a tick value without trailing zeros.
func formatNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// segments splits a series at its NaN points into runs of pixel points.
func (l layout) segments(s Series) [][][2]float64 {
	var out [][][2]float64
	var cur [][2]float64
	for _, pt := range s.Points {
		if math.IsNaN(pt.Y) || math.IsInf(pt.Y, 0) || (l.xlog && pt.X <= 0) {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, [2]float64{l.px(pt.X), l.py(pt.Y)})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// SVG writes the plot as a standalone SVG document.
func (p *Plot) SVG(w io.Writer) error {
	l := p.layout()
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="13">`+"\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotW, plotH)
	fmt.Fprintf(b, `<text x="%d" y="28" text-anchor="middle" font-size="16" font-weight="bold">%s</text>`+"\n", plotW/2, xmlText(p.Title))
	for _, t := range l.yticks {
		y := l.py(t)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", plotLeft, y, plotRight, y)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="black"/>`+"\n", plotLeft-tickLen, y, plotLeft, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", plotLeft-tickLen-3, y, xmlText(formatNum(t)))
	}
	for _, t := range l.xticks {
		x := l.px(l.xTickValue(t))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x, plotTop, x, plotBottom)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black"/>`+"\n", x, plotBottom, x, plotBottom+tickLen)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, plotBottom+tickLen+15, xmlText(p.xLabel(l.xTickValue(t))))
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>`+"\n", plotLeft, plotTop, plotRight-plotLeft, plotBottom-plotTop)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", (plotLeft+plotRight)/2, plotH-18, xmlText(p.XLabel))
	fmt.Fprintf(b, `<text x="20" y="%d" text-anchor="middle" transform="rotate(-90 20 %d)">%s</text>`+"\n", (plotTop+plotBottom)/2, (plotTop+plotBottom)/2, xmlText(p.YLabel))
	for _, s := range p.Series {
		for _, seg := range l.segments(s) {
			pts := make([]string, len(seg))
			for i, pt := range seg {
				pts[i] = fmt.Sprintf("%.1f,%.1f", pt[0], pt[1])
			}
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), hexColor(s.Color), svgDash(s.Dash))
			for _, pt := range seg {
				fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%g" fill="%s"/>`+"\n", pt[0], pt[1], markerRadius, hexColor(s.Color))
			}
		}
	}
	for i, e := range p.Legend {
		y := plotTop + 10 + 20*i
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", legendX, y, legendX+30, y, hexColor(e.Color), svgDash(e.Dash))
		fmt.Fprintf(b, `<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", legendX+38, y, xmlText(e.Label))
	}
	fmt.Fprintln(b, `</svg>`)
	return b.Flush()
}

// xmlText escapes s for an SVG text node.
func xmlText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func hexColor(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

func svgDash(d Dash) string {
	pat := d.pattern()
	if pat == nil {
		return ""
	}
	parts := make([]string, len(pat))
	for i, v := range pat {
		parts[i] = formatNum(v)
	}
	return ` stroke-dasharray="` + strings.Join(parts, ",") + `"`
}

// PNG writes the plot as a PNG image.
func (p *Plot) PNG(w io.Writer) error {
	l := p.layout()
	img := image.NewRGBA(image.Rect(0, 0, plotW, plotH))
	fillRect(img, img.Bounds(), white)
	drawText(img, plotW/2, 20, p.Title, black, anchorMiddle, false)
	for _, t := range l.yticks {
		y := l.py(t)
		line(img, plotLeft, y, plotRight, y, grey, 1, nil)
		line(img, plotLeft-tickLen, y, plotLeft, y, black, 1, nil)
		drawText(img, plotLeft-tickLen-4, int(y)-glyphH*textScale/2, formatNum(t), black, anchorEnd, false)
	}
	for _, t := range l.xticks {
		x := l.px(l.xTickValue(t))
		line(img, x, plotTop, x, plotBottom, grey, 1, nil)
		line(img, x, plotBottom, x, plotBottom+tickLen, black, 1, nil)
		drawText(img, int(x), plotBottom+tickLen+4, p.xLabel(l.xTickValue(t)), black, anchorMiddle, false)
	}
	for _, seg := range [][4]float64{{plotLeft, plotTop, plotRight, plotTop}, {plotLeft, plotBottom, plotRight, plotBottom},
		{plotLeft, plotTop, plotLeft, plotBottom}, {plotRight, plotTop, plotRight, plotBottom}} {
		line(img, seg[0], seg[1], seg[2], seg[3], black, 1, nil)
	}
	drawText(img, (plotLeft+plotRight)/2, plotH-30, p.XLabel, black, anchorMiddle, false)
	drawText(img, 12, (plotTop+plotBottom)/2, p.YLabel, black, anchorMiddle, true)
	for _, s := range p.Series {
		for _, seg := range l.segments(s) {
			for i := 1; i < len(seg); i++ {
				line(img, seg[i-1][0], seg[i-1][1], seg[i][0], seg[i][1], s.Color, 2, s.Dash.pattern())
			}
			for _, pt := range seg {
				r := int(markerRadius)
				fillRect(img, image.Rect(int(pt[0])-r, int(pt[1])-r, int(pt[0])+r+1, int(pt[1])+r+1), s.Color)
			}
		}
	}
	for i, e := range p.Legend {
		y := float64(plotTop + 10 + 20*i)
		line(img, legendX, y, legendX+30, y, e.Color, 2, e.Dash.pattern())
		drawText(img, legendX+38, int(y)-glyphH*textScale/2, e.Label, black, anchorStart, false)
	}
	return png.Encode(w, img)
}

// fillRect fills r with c.
func fillRect(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

// line draws a line of the given width from (x0,y0) to (x1,y1), dashed
// with the on/off lengths of pattern (nil: solid).
func line(img *image.RGBA, x0, y0, x1, y1 float64, c color.RGBA, width int, pattern []float64) {
	length := math.Hypot(x1-x0, y1-y0)
	steps := int(math.Ceil(length*2)) + 1
	period := 0.0
	for _, v := range pattern {
		period += v
	}
	for i := 0; i <= steps; i++ {
		f := float64(i) / float64(steps)
		if period > 0 && !dashOn(pattern, math.Mod(f*length, period)) {
			continue
		}
		x, y := int(math.Round(x0+f*(x1-x0))), int(math.Round(y0+f*(y1-y0)))
		fillRect(img, image.Rect(x-(width-1)/2, y-(width-1)/2, x+width/2+1, y+width/2+1), c)
	}
}

// dashOn reports whether position pos of a dash period is drawn.
func dashOn(pattern []float64, pos float64) bool {
	for i, v := range pattern {
		if pos < v {
			return i%2 == 0
		}
		pos -= v
	}
	return false
}

// Text anchors: where x is along the text.
const (
	anchorStart = iota
	anchorMiddle
	anchorEnd
)

// drawText draws s with the bitmap font, its top at y (or, vertical, its
// left edge at x, reading upwards) and anchored at x (y) as anchor says.
func drawText(img *image.RGBA, x, y int, s string, c color.RGBA, anchor int, vertical bool) {
	width := utf8.RuneCountInString(s)*(glyphW+1)*textScale - textScale
	offset := 0
	switch anchor {
	case anchorMiddle:
		offset = -width / 2
	case anchorEnd:
		offset = -width
	}
	i := 0
	for _, r := range s {
		g := glyph(r)
		for gy := range glyphH {
			for gx := range glyphW {
				if g[gy][gx] == ' ' {
					continue
				}
				// Horizontal: column along x. Vertical: the text runs
				// up the page, glyph rows along x.
				along := offset + i*(glyphW+1)*textScale + gx*textScale
				across := gy * textScale
				px, py := x+along, y+across
				if vertical {
					px, py = x+across-glyphH*textScale/2, y-along
				}
				fillRect(img, image.Rect(px, py, px+textScale, py+textScale), c)
			}
		}
		i++
	}
}
