package crawler

import (
	"os"
	"strings"
	"testing"
)

func TestCovers(t *testing.T) {
	ds := normalDomains([]string{"googlebot.com", "search.msn.com"})
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"crawl-66-249-66-1.googlebot.com", true},
		{"crawl-66-249-66-1.googlebot.com.", true},
		{"googlebot.com", true},
		{"a.b.c.googlebot.com", true},
		{"msnbot-1.search.msn.com", true},
		{"evilgooglebot.com", false},
		{"googlebot.com.evil.net", false},
		{"googlebot.com.evil.net.", false},
		{"msn.com", false},
		{"xsearch.msn.com", false},
		{"oglebot.com", false},
		{"com", false},
		{"", false},
		{".", false},
	} {
		if got := ds.covers(tc.name); got != tc.want {
			t.Errorf("covers(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCheckDomain(t *testing.T) {
	for _, ok := range []string{"googlebot.com", "search.msn.com", "a-b.example", "Crawler.Example"} {
		if err := CheckDomain(ok); err != nil {
			t.Errorf("CheckDomain(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "com", ".com", "example.", "a..b", "-a.com", "a-.com", "a b.com", "a_b.com", "*.googlebot.com",
		strings.Repeat("a", 64) + ".com", strings.Repeat("a.", 127) + "com"} {
		if err := CheckDomain(bad); err == nil {
			t.Errorf("CheckDomain(%q) = nil, want an error", bad)
		}
	}
}

func TestDefaultDomains(t *testing.T) {
	ds := DefaultDomains()
	want := []string{"googlebot.com", "google.com", "googleusercontent.com", "search.msn.com", "applebot.apple.com",
		"yandex.ru", "yandex.net", "yandex.com", "baidu.com", "baidu.jp"}
	if strings.Join(ds, ",") != strings.Join(want, ",") {
		t.Errorf("DefaultDomains() = %q, want %q", ds, want)
	}
	for _, v := range Vendors() {
		if !strings.HasPrefix(v.Source, "https://") {
			t.Errorf("vendor %s: source %q, want its documentation's https URL", v.Name, v.Source)
		}
		for _, d := range v.Domains {
			if err := CheckDomain(d); err != nil {
				t.Errorf("vendor %s: %v", v.Name, err)
			}
		}
	}
	ds[0] = "changed"
	if DefaultDomains()[0] != "googlebot.com" {
		t.Error("changing DefaultDomains' slice changed the table")
	}
}

func TestResolverAt(t *testing.T) {
	if _, err := ResolverAt("10.0.0.2:53"); err != nil {
		t.Errorf("ResolverAt(10.0.0.2:53) = %v", err)
	}
	if _, err := ResolverAt("[2001:db8::53]:5353"); err != nil {
		t.Errorf("ResolverAt([2001:db8::53]:5353) = %v", err)
	}
	for _, bad := range []string{"", "10.0.0.2", "10.0.0.2:", ":53", "10.0.0.2:0", "10.0.0.2:65536", "10.0.0.2:dns", "2001:db8::53"} {
		if _, err := ResolverAt(bad); err == nil {
			t.Errorf("ResolverAt(%q) = nil error, want one", bad)
		}
	}
}

// TestDocsVendorTable: docs/configure.md's table of published domains is
// Vendors, row for row.
func TestDocsVendorTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configure.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range Vendors() {
		row := "| " + v.Name + " | `" + strings.Join(v.Domains, "`, `") + "` | <" + v.Source + "> |"
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/configure.md lacks the row\n%s", row)
		}
	}
}
