package event

import (
	"fmt"
	"math"
	"strconv"
)

// The waiting room's colours must stay readable with a shop's branding:
// WCAG 2.2 AA asks a contrast ratio of at least 4.5:1 between text and its
// background (success criterion 1.4.3) and 3:1 for the parts of controls
// and graphics that carry meaning (1.4.11). Page.Validate refuses the pairs
// the built-in page uses that fall short, naming each; the page works out
// the rest (its muted text and a button's label) from the brand colours.

// The built-in page's colours, which a Page's empty Colors fields keep.
const (
	DefaultPrimary    = "#0b63c4"
	DefaultBackground = "#ffffff"
	DefaultText       = "#1d1d1f"
)

// Minimum contrast ratios of WCAG 2.2 AA.
const (
	MinTextContrast    = 4.5 // text and images of text (1.4.3)
	MinNonTextContrast = 3.0 // user-interface components and graphics (1.4.11)
)

// Luminance is the relative luminance of a #rrggbb colour as WCAG 2.2
// defines it: 0 for black, 1 for white. A malformed colour is black.
func Luminance(hex string) float64 {
	if len(hex) != 7 || hex[0] != '#' {
		return 0
	}
	v, err := strconv.ParseUint(hex[1:], 16, 32)
	if err != nil {
		return 0
	}
	lin := func(c uint64) float64 {
		s := float64(c) / 255
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(v>>16&0xff) + 0.7152*lin(v>>8&0xff) + 0.0722*lin(v&0xff)
}

// Contrast is the WCAG contrast ratio of two #rrggbb colours, from 1
// (the same luminance) to 21 (black on white); the order does not matter.
func Contrast(a, b string) float64 {
	la, lb := Luminance(a), Luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// Effective is c with the built-in colours in its empty fields.
func (c Colors) Effective() Colors {
	e := c
	if e.Primary == "" {
		e.Primary = DefaultPrimary
	}
	if e.Background == "" {
		e.Background = DefaultBackground
	}
	if e.Text == "" {
		e.Text = DefaultText
	}
	return e
}

// ContrastProblem is a pair of a page's colours that falls short of WCAG
// 2.2 AA.
type ContrastProblem struct {
	// Foreground and Background name the colours ("colors.text", or
	// "colors.text (default)" for a built-in one), with their values.
	Foreground, Background           string
	ForegroundValue, BackgroundValue string
	Ratio, Min                       float64
	Use                              string // what the pair is used for
}

func (p ContrastProblem) String() string {
	// The ratio is rounded down: 4.499 must not read as the 4.5 it misses
	// (#777777 on white, 4.478, reads 4.47).
	return fmt.Sprintf("%s %s on %s %s has a contrast ratio of %.2f:1, below the %.1f:1 WCAG 2.2 AA asks for %s",
		p.Foreground, p.ForegroundValue, p.Background, p.BackgroundValue, math.Floor(p.Ratio*100)/100, p.Min, p.Use)
}

// CheckContrast returns the first pair of c's colours (with the built-in
// ones in its empty fields) that falls short of WCAG 2.2 AA on the
// built-in page, or nil: the text on the background (4.5:1), and the
// primary colour on the background (3:1: the progress bar, the focus
// ring and the controls' outlines). A button's label needs no check: the
// page writes it in white or black, whichever contrasts more with the
// primary colour.
func (c Colors) CheckContrast() *ContrastProblem {
	e := c.Effective()
	name := func(field, set string) string {
		if set == "" {
			return field + " (default)"
		}
		return field
	}
	pairs := []ContrastProblem{
		{Foreground: name("colors.text", c.Text), ForegroundValue: e.Text, Background: name("colors.background", c.Background), BackgroundValue: e.Background,
			Min: MinTextContrast, Use: "text"},
		{Foreground: name("colors.primary", c.Primary), ForegroundValue: e.Primary, Background: name("colors.background", c.Background), BackgroundValue: e.Background,
			Min: MinNonTextContrast, Use: "controls and graphics"},
	}
	for _, p := range pairs {
		p.Ratio = Contrast(p.ForegroundValue, p.BackgroundValue)
		if p.Ratio < p.Min {
			return &p
		}
	}
	return nil
}
