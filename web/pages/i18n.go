package pages

import (
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The waiting room's messages: one JSON file per language in i18n/, a flat
// object of message key → text with {placeholders} the page fills in. Every
// catalog has every key of en.json (TestCatalogsComplete).
//
//go:embed i18n/*.json
var catalogFS embed.FS

// language is one language of the waiting room.
type language struct {
	Code string // the catalog's file name and the ?lang= value
	Tag  string // the HTML lang value (BCP 47)
	Name string // its own name, for the switcher
	RTL  bool   // written right to left
}

// languages in the switcher's order; the first is the fallback.
var languages = []language{
	{Code: "en", Tag: "en", Name: "English"},
	{Code: "zh", Tag: "zh-Hans", Name: "中文"},
	{Code: "es", Tag: "es", Name: "Español"},
	{Code: "ja", Tag: "ja", Name: "日本語"},
	{Code: "de", Tag: "de", Name: "Deutsch"},
	{Code: "hi", Tag: "hi", Name: "हिन्दी"},
	{Code: "ar", Tag: "ar", Name: "العربية", RTL: true},
}

// catalogs holds every language's messages, read once from the embedded
// files; they never change while the process runs.
type catalogs map[string]map[string]string

// loadCatalogs parses the embedded catalogs. The files are part of the
// binary, so an error is a build mistake the tests catch.
func loadCatalogs() (catalogs, error) {
	out := catalogs{}
	for _, l := range languages {
		b, err := catalogFS.ReadFile("i18n/" + l.Code + ".json")
		if err != nil {
			return nil, err
		}
		m := map[string]string{}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("i18n/%s.json: %w", l.Code, err)
		}
		out[l.Code] = m
	}
	return out, nil
}

// messages returns lang's catalog with overrides applied over it (an
// event's copy); keys missing from lang fall back to English.
func (cs catalogs) messages(lang string, overrides map[string]string) map[string]string {
	out := maps.Clone(cs["en"])
	maps.Copy(out, cs[lang])
	maps.Copy(out, overrides)
	return out
}

// langByCode returns the language with code, and whether there is one.
func langByCode(code string) (language, bool) {
	i := slices.IndexFunc(languages, func(l language) bool { return l.Code == code })
	if i < 0 {
		return language{}, false
	}
	return languages[i], true
}

// primaryCode maps a language tag ("zh-TW", "pt-BR", "ES") to the code of a
// catalog, "" when there is none.
func primaryCode(tag string) string {
	primary, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
	if _, ok := langByCode(primary); ok {
		return primary
	}
	return ""
}

// negotiate picks the waiting room's language: an explicit choice (the
// ?lang= query, then the switcher's cookie) when it names a catalog;
// otherwise the Accept-Language entry (RFC 9110 §12.5.4) with the highest
// q among the catalogs, the earliest on a tie; English when none fits.
// Malformed entries are skipped, never an error.
func negotiate(query, cookie, acceptLanguage string) language {
	for _, v := range []string{query, cookie} {
		if l, ok := langByCode(strings.ToLower(v)); ok {
			return l
		}
	}
	best, bestQ := languages[0], 0.0
	if len(acceptLanguage) > 1024 {
		acceptLanguage = acceptLanguage[:1024]
	}
	for entry := range strings.SplitSeq(acceptLanguage, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(entry), ";")
		q := 1.0
		if p := strings.TrimSpace(params); p != "" {
			v, ok := strings.CutPrefix(p, "q=")
			f, err := strconv.ParseFloat(v, 64)
			if !ok || err != nil || f < 0 || f > 1 {
				continue
			}
			q = f
		}
		code := primaryCode(tag)
		if code == "" || q <= bestQ {
			continue
		}
		best, _ = langByCode(code)
		bestQ = q
	}
	return best
}
