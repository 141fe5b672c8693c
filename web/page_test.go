package web

import (
	"io"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func TestPageLang(t *testing.T) {
	cases := []struct{ query, accept, want string }{
		{"", "", langEnglish},
		{"", "zh-CN,zh;q=0.9,en;q=0.8", langChinese},
		{"", "en-US,en;q=0.9,zh-CN;q=0.8", langEnglish},
		{"", "fr-FR,zh-TW;q=0.5", langChinese},
		{"", "de,fr;q=0.9", langEnglish},
		{"", "en;q=0.2, zh;q=0.7", langChinese},
		{"", "zh;q=bogus,en", langEnglish},
		{"en", "zh-CN", langEnglish},
		{"zh", "en-US", langChinese},
	}
	for _, tc := range cases {
		if got := pageLang(tc.query, tc.accept); got != tc.want {
			t.Errorf("pageLang(%q, %q) = %q, want %q", tc.query, tc.accept, got, tc.want)
		}
	}
}

// TestRoomPage checks what the waiting room costs and promises: one small
// self-contained document in the visitor's language, cacheable per
// language, calling no other origin.
func TestRoomPage(t *testing.T) {
	app := testApp(t)
	for accept, lang := range map[string]string{"zh-CN,zh;q=0.9": langChinese, "en-GB": langEnglish} {
		req := httptest.NewRequest("GET", "/e/ev", nil)
		req.Header.Set("Accept-Language", accept)
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(body), `<html lang="`+lang+`">`) {
			t.Errorf("Accept-Language %s: %d, want 200 with lang %s", accept, resp.StatusCode, lang)
		}
		if got := resp.Header.Get("Vary"); !strings.Contains(got, "Accept-Language") {
			t.Errorf("Vary %q, want Accept-Language", got)
		}
		if len(body) > 40*1024 {
			t.Errorf("room page is %d bytes, want at most 40 KB (the whole transfer must stay under 50 KB)", len(body))
		}
	}
	for name, page := range map[string][]byte{"room": roomHTML, "console": consoleHTML} {
		if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|@import|url\(`).Find(page); m != nil {
			t.Errorf("%s page refers to another origin or asset: %q", name, m)
		}
	}
	resp, err := app.Test(httptest.NewRequest("GET", "/admin/", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("console page: %d, Cache-Control %q, CSP %q", resp.StatusCode, resp.Header.Get("Cache-Control"), resp.Header.Get("Content-Security-Policy"))
	}
}

// TestPublicEventCacheControl: the public event JSON may be cached by a
// CDN for one second, so "sold out" polls from a crowd reach no node.
func TestPublicEventCacheControl(t *testing.T) {
	app := testApp(t)
	resp, err := app.Test(httptest.NewRequest("GET", "/events/ev", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "public, max-age=1" {
		t.Errorf("GET /events/ev: %d, Cache-Control %q, want 200 and %q", resp.StatusCode, resp.Header.Get("Cache-Control"), "public, max-age=1")
	}
	resp, err = app.Test(httptest.NewRequest("GET", "/events/nosuch", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 404 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("unknown event: %d, Cache-Control %q, want 404 and no-store", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
}
