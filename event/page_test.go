package event

import (
	"context"
	"errors"
	"testing"

	"github.com/anteroom/anteroom/internal/testenv"
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

// TestPagesStore: pages are saved with a compare-and-set like the
// configuration, apart from it.
func TestPagesStore(t *testing.T) {
	r := testenv.StartRedis(t)
	s := NewStore(r.Client(t))
	ctx := context.Background()
	if p, err := s.Pages(ctx, "ev"); err != nil || p.Version != 0 || p.Draft != nil {
		t.Fatalf("no pages yet: %+v %v", p, err)
	}
	saved, err := s.PutPages(ctx, "ev", Pages{Draft: &Page{Name: "Shop"}})
	if err != nil || saved.Version != 1 {
		t.Fatalf("first save: %+v %v", saved, err)
	}
	if _, err := s.PutPages(ctx, "ev", Pages{Draft: &Page{Name: "stale"}}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a save from version 0 after version 1: %v, want ErrConflict", err)
	}
	saved.Published, saved.PublishedVersion = saved.Draft, saved.Version+1
	if saved, err = s.PutPages(ctx, "ev", saved); err != nil || saved.Version != 2 {
		t.Fatalf("publish: %+v %v", saved, err)
	}
	got, err := s.Pages(ctx, "ev")
	if err != nil || got.Version != 2 || got.PublishedVersion != 2 || got.Published == nil || got.Published.Name != "Shop" {
		t.Fatalf("stored: %+v %v", got, err)
	}
	if _, err := s.Get(ctx, "ev"); !errors.Is(err, ErrNotFound) {
		t.Errorf("pages created a configuration: %v", err)
	}
}
