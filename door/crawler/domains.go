package crawler

import (
	"fmt"
	"strings"
)

// Vendor is one search engine's crawlers: the domains its documentation
// says their reverse-DNS names are under, and where it says so.
type Vendor struct {
	// Name is the search engine's.
	Name string
	// Domains are the crawlers' published domains: a verified crawler's
	// PTR name is one of them or under one of them at a label boundary.
	Domains []string
	// Source is the vendor's documentation of the method and the domains.
	Source string
}

// Vendors returns the table of published crawler domains, each with the
// vendor's documentation of the reverse-then-forward DNS check: a new
// table at each call. A node adds domains of its own with
// ANTEROOM_CRAWLER_DOMAINS (Config.Domains).
func Vendors() []Vendor {
	return []Vendor{
		{Name: "Google", Domains: []string{"googlebot.com", "google.com", "googleusercontent.com"},
			Source: "https://developers.google.com/search/docs/crawling-indexing/verifying-googlebot"},
		{Name: "Bing", Domains: []string{"search.msn.com"},
			Source: "https://www.bing.com/webmasters/help/how-to-verify-bingbot-3905dc26"},
		{Name: "Apple", Domains: []string{"applebot.apple.com"},
			Source: "https://support.apple.com/en-us/119829"},
		{Name: "Yandex", Domains: []string{"yandex.ru", "yandex.net", "yandex.com"},
			Source: "https://yandex.com/support/webmaster/robot-workings/check-yandex-robots.html"},
		{Name: "Baidu", Domains: []string{"baidu.com", "baidu.jp"},
			Source: "https://www.baidu.com/search/spider.html"},
	}
}

// DefaultDomains returns every domain of Vendors, in the table's order:
// a new slice, the caller's to change.
func DefaultDomains() []string {
	var ds []string
	for _, v := range Vendors() {
		ds = append(ds, v.Domains...)
	}
	return ds
}

// CheckDomain reports whether d can be a crawler domain: a host name of
// at least two labels (a bare top-level domain such as "com" would make
// every host under it a crawler), each of letters, digits and inner
// hyphens, at most 253 characters, with no leading or trailing dot.
func CheckDomain(d string) error {
	if len(d) == 0 || len(d) > 253 {
		return fmt.Errorf("crawler domain %q: want a host name of 1 to 253 characters", d)
	}
	labels := strings.Split(d, ".")
	if len(labels) < 2 {
		return fmt.Errorf("crawler domain %q: want at least two labels (example.com), not a top-level domain", d)
	}
	for _, l := range labels {
		if !validLabel(l) {
			return fmt.Errorf("crawler domain %q: label %q: want 1 to 63 letters, digits or inner hyphens", d, l)
		}
	}
	return nil
}

func validLabel(l string) bool {
	if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// domains is a set of crawler domains, lower case, without the root's dot.
type domains []string

// normalDomains lowers and trims ds, leaving out what CheckDomain refuses
// and duplicates.
func normalDomains(ds []string) domains {
	var out domains
	seen := make(map[string]bool, len(ds))
	for _, d := range ds {
		d = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(d), "."))
		if CheckDomain(d) != nil || seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, d)
	}
	return out
}

// covers reports whether name (a PTR name, any case, with or without the
// root's dot) is one of ds or under one of them at a label boundary:
// crawl-66-249-66-1.googlebot.com is under googlebot.com;
// evilgooglebot.com and googlebot.com.evil.net are not.
func (ds domains) covers(name string) bool {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	for _, d := range ds {
		if name == d || strings.HasSuffix(name, d) && name[len(name)-len(d)-1] == '.' {
			return true
		}
	}
	return false
}
