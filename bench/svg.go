package main

import (
	"fmt"
	"math"
	"strings"
)

// svgChart draws throughput against concurrency (log2 x axis) as a small
// self-contained SVG line chart.
func svgChart(curves []curve) string {
	const w, h, left, bottom, top, right = 640.0, 360.0, 70.0, 40.0, 30.0, 150.0
	maxX, maxY := 1.0, 1.0
	for _, c := range curves {
		for _, p := range c.points {
			maxX, maxY = math.Max(maxX, p[0]), math.Max(maxY, p[1])
		}
	}
	maxY *= 1.1
	lx := math.Log2(maxX)
	x := func(v float64) float64 { return left + (math.Log2(v)/math.Max(lx, 1))*(w-left-right) }
	y := func(v float64) float64 { return h - bottom - v/maxY*(h-bottom-top) }
	colors := []string{"#0a7", "#c40", "#36c", "#999", "#a3a"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`, w, h)
	fmt.Fprintf(&b, `<rect width="%.0f" height="%.0f" fill="#fff"/>`, w, h)
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="14">requests/s against concurrent connections (wrk, closed loop)</text>`, left)
	for i := 0; i <= 4; i++ {
		v := maxY / 4 * float64(i)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/>`, left, w-right, y(v), y(v))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.0f</text>`, left-6, y(v)+4, v)
	}
	for c := 1.0; c <= maxX; c *= 2 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.0f</text>`, x(c), h-bottom+16, c)
	}
	for i, c := range curves {
		col := colors[i%len(colors)]
		var pts []string
		for _, p := range c.points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p[0]), y(p[1])))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, x(p[0]), y(p[1]), col)
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, col, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s">%s</text>`, w-right+10, top+20+float64(i)*18, col, c.name)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">connections</text></svg>`, (left+w-right)/2, h-6)
	return b.String()
}
