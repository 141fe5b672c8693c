package event

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestContrast(t *testing.T) {
	cases := []struct {
		a, b string
		want float64
	}{
		{"#000000", "#ffffff", 21},
		{"#ffffff", "#000000", 21},
		{"#ffffff", "#ffffff", 1},
		{"#777777", "#ffffff", 4.48},
		{"#767676", "#ffffff", 4.54},
		{"#0b63c4", "#ffffff", 5.84},
		{"#5c6166", "#ffffff", 6.26},
		{"#ff0000", "#ffffff", 4.00},
	}
	for _, tc := range cases {
		if got := Contrast(tc.a, tc.b); math.Abs(got-tc.want) > 0.01 {
			t.Errorf("Contrast(%s, %s) = %.3f, want %.2f", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestCheckContrast: a page's colours, with the built-in ones in empty
// fields, pass WCAG 2.2 AA or name their first failing pair and its ratio.
func TestCheckContrast(t *testing.T) {
	cases := []struct {
		name   string
		colors Colors
		want   string // "" when the colours pass
	}{
		{"built-in", Colors{}, ""},
		{"branded", Colors{Primary: "#8a1538", Background: "#fffaf3", Text: "#222222"}, ""},
		{"dark", Colors{Primary: "#ffd166", Background: "#14161a", Text: "#f2f2f2"}, ""},
		{"text just short", Colors{Text: "#777777"}, "colors.text #777777 on colors.background (default) #ffffff has a contrast ratio of 4.47:1, below the 4.5:1"},
		{"text just enough", Colors{Text: "#767676"}, ""},
		{"dark background, default text", Colors{Background: "#000000"}, "colors.text (default) #1d1d1f on colors.background #000000 has a contrast ratio of 1.24:1"},
		{"pale primary", Colors{Primary: "#ffd166"}, "colors.primary #ffd166 on colors.background (default) #ffffff has a contrast ratio of 1.44:1, below the 3.0:1"},
		{"primary 3:1", Colors{Primary: "#949494"}, ""},
		{"text before primary", Colors{Primary: "#ffffff", Text: "#ffffff"}, "colors.text #ffffff"},
	}
	for _, tc := range cases {
		p := tc.colors.CheckContrast()
		got := ""
		if p != nil {
			got = p.String()
		}
		if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		err := (&Page{Colors: tc.colors}).Validate()
		if (err == nil) != (tc.want == "") || (err != nil && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want))) {
			t.Errorf("%s: Validate: %v, want the same verdict as an ErrInvalid", tc.name, err)
		}
	}
}
