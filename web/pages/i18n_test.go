package pages

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCatalogsComplete: every language has every message of en.json, no
// message the page does not know, and the same {placeholders}, so no
// visitor ever sees a key or an unfilled "{w}".
func TestCatalogsComplete(t *testing.T) {
	cs, err := loadCatalogs()
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{"en", "zh", "es", "ja", "de", "hi", "ar"} {
		if _, ok := cs[code]; !ok {
			t.Errorf("no catalog for %s", code)
		}
	}
	holes := regexp.MustCompile(`\{[a-z]+\}`)
	en := cs["en"]
	for code, msgs := range cs {
		for k, v := range en {
			got, ok := msgs[k]
			if !ok || strings.TrimSpace(got) == "" {
				t.Errorf("%s.json lacks %q", code, k)
				continue
			}
			want, have := holes.FindAllString(v, -1), holes.FindAllString(got, -1)
			slices.Sort(want)
			slices.Sort(have)
			if !slices.Equal(want, have) {
				t.Errorf("%s.json %q has placeholders %v, en has %v", code, k, have, want)
			}
		}
		for k := range msgs {
			if _, ok := en[k]; !ok {
				t.Errorf("%s.json has %q, which en.json does not", code, k)
			}
		}
	}
	// The runtime uses these keys (room.js); each must be in the catalog.
	js := string(roomJS)
	for _, m := range regexp.MustCompile(`\bt\("([A-Za-z_]+)"[,)]`).FindAllStringSubmatch(js, -1) {
		if _, ok := en[m[1]]; !ok {
			t.Errorf("room.js asks for %q, which en.json lacks", m[1])
		}
	}
}

func TestNegotiate(t *testing.T) {
	cases := []struct{ query, cookie, accept, want string }{
		{"", "", "", "en"},
		{"", "", "zh-CN,zh;q=0.9,en;q=0.8", "zh"},
		{"", "", "en-US,en;q=0.9,zh-CN;q=0.8", "en"},
		{"", "", "fr-FR,zh-TW;q=0.5", "zh"},
		{"", "", "fr,pt;q=0.9", "en"},
		{"", "", "en;q=0.2, zh;q=0.7", "zh"},
		{"", "", "zh;q=bogus,en", "en"},
		{"", "", "ja-JP", "ja"},
		{"", "", "de-CH;q=0.8, es-419;q=0.9", "es"},
		{"", "", "hi-IN, en;q=0.5", "hi"},
		{"", "", "ar-EG", "ar"},
		{"", "", "es;q=0.5, de;q=0.5", "es"}, // a tie: the earlier entry
		{"", "", "de;q=2, es;q=0.1", "es"},   // q above 1 is malformed
		{"", "", "ja;q=0", "en"},             // q=0: not acceptable
		{"", "", "de;level=1", "en"},         // not a q parameter
		{"en", "", "zh-CN", "en"},
		{"ZH", "", "en-US", "zh"},
		{"", "ja", "de", "ja"},                           // the switcher's cookie beats the header
		{"de", "ja", "es", "de"},                         // the query beats the cookie
		{"xx", "yy", "hi", "hi"},                         // unknown choices fall through
		{"", "", strings.Repeat("x,", 600) + "de", "en"}, // only the first KB
	}
	for _, tc := range cases {
		if got := negotiate(tc.query, tc.cookie, tc.accept); got.Code != tc.want {
			t.Errorf("negotiate(%q, %q, %.40q) = %q, want %q", tc.query, tc.cookie, tc.accept, got.Code, tc.want)
		}
	}
}

// FuzzNegotiate: any header picks a language and never panics.
func FuzzNegotiate(f *testing.F) {
	f.Add("", "", "zh-CN,zh;q=0.9")
	f.Add("xx", "ar", ";;q=,q=1e9")
	f.Fuzz(func(t *testing.T, q, c, h string) {
		if l := negotiate(q, c, h); l.Code == "" {
			t.Fatalf("negotiate(%q, %q, %q): no language", q, c, h)
		}
	})
}
