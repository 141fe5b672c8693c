package event

import (
	"errors"
	"testing"
)

func TestPageLogo(t *testing.T) {
	cases := []struct {
		logo, origin string
		ok           bool
	}{
		{"", "", true},
		{"https://cdn.shop.example/a/logo.png?v=2", "https://cdn.shop.example", true},
		{"https://cdn.shop.example:8443/logo.svg", "https://cdn.shop.example:8443", true},
		{"data:image/svg+xml;base64,PHN2Zy8+", "", true},
		{"http://cdn.shop.example/logo.png", "", false},
		{"//cdn.shop.example/logo.png", "", false},
		{"https://user@cdn.shop.example/logo.png", "", false},
		{"https://CDN.example/logo.png", "", false}, // CSP sources in lowercase only
		{"https://a.example,https://b.example/x.png", "", false},
		{"data:image/png;base64,not base64!", "", false},
		{"data:image/png,rawbytes", "", false},
	}
	for _, tc := range cases {
		err := (&Page{LogoURL: tc.logo}).Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("logo %q: %v, want ok=%v", tc.logo, err, tc.ok)
		}
		if tc.ok {
			if got := LogoOrigin(tc.logo); got != tc.origin {
				t.Errorf("LogoOrigin(%q) = %q, want %q", tc.logo, got, tc.origin)
			}
		}
	}
}
