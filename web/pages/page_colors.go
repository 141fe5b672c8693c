package pages

import (
	"fmt"
	"strconv"

	"github.com/anteroom/anteroom/event"
)

// The built-in page derives three colours from a shop's brand colours so
// that they keep WCAG 2.2 AA contrast whatever the brand (the brand's own
// pairs are checked on save: event.Colors.CheckContrast):
//   - muted text (labels, notes): the text colour a third of the way to
//     the background, or closer to the text when that falls short of 4.5:1;
//   - the surface of code and the progress track: the background a touch
//     towards the text, keeping the text on it at 4.5:1;
//   - a button's label: white on the primary colour, or black when white
//     falls short of 4.5:1 and black does better.

// derivedColors are the colours the built-in page works out from a brand.
type derivedColors struct {
	Muted, Surface, OnPrimary string
}

// deriveColors works out the derived colours of c; with none of c's
// fields set it returns the zero value (the page's own defaults stay).
func deriveColors(c event.Colors) derivedColors {
	if c == (event.Colors{}) {
		return derivedColors{}
	}
	e := c.Effective()
	var d derivedColors
	for _, t := range []float64{0.35, 0.3, 0.25, 0.2, 0.15, 0.1, 0.05, 0} {
		if d.Muted = mixColor(e.Text, e.Background, t); event.Contrast(d.Muted, e.Background) >= event.MinTextContrast {
			break
		}
	}
	for _, t := range []float64{0.06, 0.04, 0.02, 0} {
		if d.Surface = mixColor(e.Background, e.Text, t); event.Contrast(e.Text, d.Surface) >= event.MinTextContrast {
			break
		}
	}
	d.OnPrimary = "#ffffff"
	if white, black := event.Contrast("#ffffff", e.Primary), event.Contrast("#000000", e.Primary); white < event.MinTextContrast && black > white {
		d.OnPrimary = "#000000"
	}
	return d
}

// mixColor is colour a moved the fraction t of the way to colour b, in
// sRGB, as #rrggbb.
func mixColor(a, b string, t float64) string {
	ca, cb := rgb(a), rgb(b)
	var out [3]int
	for i := range out {
		out[i] = int(float64(ca[i])*(1-t) + float64(cb[i])*t + 0.5)
	}
	return fmt.Sprintf("#%02x%02x%02x", out[0], out[1], out[2])
}

// rgb reads a #rrggbb colour (checked on save); a malformed one is black.
func rgb(hex string) [3]int {
	v, err := strconv.ParseUint(hex[min(1, len(hex)):], 16, 32)
	if err != nil || len(hex) != 7 {
		return [3]int{}
	}
	return [3]int{int(v >> 16 & 0xff), int(v >> 8 & 0xff), int(v & 0xff)}
}
