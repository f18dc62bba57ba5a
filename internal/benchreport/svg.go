package benchreport

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Series is one row of a distribution chart: every sample, with a label.
type Series struct {
	Label   string
	Samples []float64
}

// palette gives each series of a chart its own colour, in order.
var palette = [...]string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#17becf", "#bcbd22"}

const (
	chartWidth  = 840
	labelWidth  = 310
	rowHeight   = 28
	chartMargin = 40
)

// axis maps values to x (or y) pixels, linear or logarithmic.
type axis struct {
	lo, hi   float64
	log      bool
	from, to float64 // pixels
}

func newAxis(lo, hi, from, to float64, logScale bool) axis {
	if logScale {
		lo, hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	} else {
		lo = 0
		if hi <= 0 {
			hi = 1
		}
		step := niceStep(hi / 5)
		hi = math.Ceil(hi/step) * step
	}
	return axis{lo: lo, hi: hi, log: logScale, from: from, to: to}
}

func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func (a axis) px(v float64) float64 {
	var f float64
	if a.log {
		f = (math.Log10(v) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo))
	} else {
		f = (v - a.lo) / (a.hi - a.lo)
	}
	return a.from + f*(a.to-a.from)
}

// ticks are the values the axis labels: each power of ten on a log axis, five or six steps
// on a linear one.
func (a axis) ticks() []float64 {
	var out []float64
	if a.log {
		for v := a.lo; v <= a.hi*1.0001; v *= 10 {
			out = append(out, v)
		}
		return out
	}
	step := niceStep(a.hi / 5)
	for v := a.lo; v <= a.hi*1.0001; v += step {
		out = append(out, v)
	}
	return out
}

func num(v float64) string {
	s := fmt.Sprintf("%.3g", v)
	if strings.Contains(s, "e") {
		s = fmt.Sprintf("%.0f", v)
	}
	return s
}

func svgHeader(b *strings.Builder, w, h int, title string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", chartMargin/2, html.EscapeString(title))
}

// DistChart draws one row per series: every sample as a dot, a line from the smallest to the
// largest, a bar at the median and a tick at p90, on one shared axis labelled unit. With
// logScale the axis is logarithmic (samples must then be > 0; others are left out).
func DistChart(title, unit string, series []Series, logScale bool) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, v := range s.Samples {
			if logScale && v <= 0 {
				continue
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	h := 40 + rowHeight*len(series) + 45
	ax := newAxis(lo, hi, labelWidth, chartWidth-chartMargin, logScale)
	var b strings.Builder
	svgHeader(&b, chartWidth, h, title)
	top, bottom := 35.0, float64(35+rowHeight*len(series))
	for _, tv := range ax.ticks() {
		x := ax.px(tv)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, top, x, bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, bottom+15, num(tv))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", (ax.from+ax.to)/2, bottom+33, html.EscapeString(unit))
	for i, s := range series {
		c := palette[i%len(palette)]
		y := top + float64(i)*rowHeight + rowHeight/2
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", labelWidth-8, y, html.EscapeString(s.Label))
		var xs []float64
		for _, v := range s.Samples {
			if !logScale || v > 0 {
				xs = append(xs, v)
			}
		}
		if len(xs) == 0 {
			continue
		}
		sum := Summarize(xs)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", ax.px(sum.Min), y, ax.px(sum.Max), y, c)
		for _, v := range xs {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s" fill-opacity="0.5"/>`+"\n", ax.px(v), y, c)
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="3" height="16" fill="%s"><title>median %s</title></rect>`+"\n", ax.px(sum.P50)-1.5, y-8, c, num(sum.P50))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"><title>p90 %s</title></line>`+"\n", ax.px(sum.P90), y-6, ax.px(sum.P90), y+6, c, num(sum.P90))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">dots: runs; bar: median; tick: p90</text>`+"\n", labelWidth, h-5)
	b.WriteString("</svg>\n")
	return b.String()
}

// Line is one curve of a line chart: Y[i] at X[i].
type Line struct {
	Label string
	X, Y  []float64
}

// LineChart draws the lines on linear axes from zero, labelled xUnit and yUnit, with a legend.
func LineChart(title, xUnit, yUnit string, lines []Line) string {
	xmax, ymax := 0.0, 0.0
	for _, l := range lines {
		for i := range l.X {
			xmax, ymax = math.Max(xmax, l.X[i]), math.Max(ymax, l.Y[i])
		}
	}
	const h = 360
	left, right, top, bottom := 70.0, float64(chartWidth-220), 35.0, float64(h-50)
	xa := newAxis(0, xmax, left, right, false)
	ya := newAxis(0, ymax, bottom, top, false)
	var b strings.Builder
	svgHeader(&b, chartWidth, h, title)
	for _, tv := range xa.ticks() {
		x := xa.px(tv)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, top, x, bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, bottom+15, num(tv))
	}
	for _, tv := range ya.ticks() {
		y := ya.px(tv)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, right, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-6, y, num(tv))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", (left+right)/2, bottom+35, html.EscapeString(xUnit))
	fmt.Fprintf(&b, `<text x="15" y="%.1f" text-anchor="middle" transform="rotate(-90 15 %.1f)">%s</text>`+"\n", (top+bottom)/2, (top+bottom)/2, html.EscapeString(yUnit))
	for i, l := range lines {
		c := palette[i%len(palette)]
		var pts []string
		for j := range l.X {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xa.px(l.X[j]), ya.px(l.Y[j])))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), c)
		for j := range l.X {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s: %s at %s</title></circle>`+"\n", xa.px(l.X[j]), ya.px(l.Y[j]), c, html.EscapeString(l.Label), num(l.Y[j]), num(l.X[j]))
		}
		ly := top + 10 + float64(i)*18
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", right+15, ly, right+35, ly, c)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" dominant-baseline="middle">%s</text>`+"\n", right+40, ly, html.EscapeString(l.Label))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
