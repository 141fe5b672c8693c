package rules

import (
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/anteroom/anteroom/door"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
)

// activation is the rule variables over one request, resolved lazily:
// only a variable a rule reads is built, once per request however many
// rules read it. Activations are pooled by the Engine; one serves one
// Match at a time.
type activation struct {
	r       *door.Request
	lists   door.Lists
	crawler door.Crawlers
	// vals are the variables built so far, by index of the names below.
	vals [nVals]any
	// The maps: their address is the value, so resolving one costs
	// nothing.
	params, headers, cookies, claims, signals lazyMap
	// claimed are the claims read through Request.Claim, once each.
	claimed map[string][]string
	// query is request.query's parameters, split when a rule lists them.
	query []param
}

// Indexes of activation.vals.
const (
	iMethod = iota
	iHost
	iPath
	iQuery
	iIP
	iUser
	iNow
	nVals
)

var _ interpreter.Activation = (*activation)(nil)

// reset readies a for r (nil: for the pool).
func (a *activation) reset(r *door.Request, lists door.Lists, crawler door.Crawlers) {
	a.r, a.lists, a.crawler = r, lists, crawler
	clear(a.vals[:])
	a.query = a.query[:0]
	a.params = lazyMap{a: a, kind: params}
	a.headers = lazyMap{a: a, kind: headers}
	a.cookies = lazyMap{a: a, kind: cookies}
	a.claims = lazyMap{a: a, kind: claimsMap}
	a.signals = lazyMap{a: a, kind: signalsMap}
	clear(a.claimed)
}

// claim is the caller's claim name: the step's, else read once through
// Request.Claim.
func (a *activation) claim(name string) ([]string, bool) {
	if l, ok := a.r.Claims[name]; ok {
		return l, true
	}
	if a.r.Claim == nil {
		return nil, false
	}
	if l, ok := a.claimed[name]; ok {
		return l, l != nil
	}
	l, ok := a.r.Claim(name)
	if !ok {
		l = nil
	}
	if a.claimed == nil {
		a.claimed = map[string][]string{}
	}
	a.claimed[name] = l
	return l, ok
}

// signal reports whether the request carries the sale's signal name from
// its trusted source.
func (a *activation) signal(name string) bool {
	switch name {
	case "device", "payment", "phone", "address":
		return a.r.Signal != nil && a.r.Signal(name)
	}
	return false
}

// ResolveName implements interpreter.Activation: the variable name, built
// on its first read.
func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case varMethod:
		if m, ok := methods[a.r.Method]; ok {
			return m, true
		}
		return a.str(iMethod, a.r.Method), true
	case varHost:
		return a.str(iHost, a.r.Host), true
	case varPath:
		return a.str(iPath, a.r.Path), true
	case varQuery:
		return a.str(iQuery, a.r.Query), true
	case varUser:
		return a.str(iUser, a.r.User), true
	case varIP:
		if a.vals[iIP] == nil {
			ip := ""
			if a.r.Addr.IsValid() {
				ip = a.r.Addr.Unmap().String()
			}
			a.vals[iIP] = types.String(ip)
		}
		return a.vals[iIP], true
	case varNow:
		if a.vals[iNow] == nil {
			a.vals[iNow] = types.Timestamp{Time: a.r.Now}
		}
		return a.vals[iNow], true
	case varParams:
		return &a.params, true
	case varHeaders:
		return &a.headers, true
	case varCookies:
		return &a.cookies, true
	case varClaims:
		return &a.claims, true
	case varSignals:
		return &a.signals, true
	case varBusy:
		return types.Bool(a.r.Busy), true
	case varCrawler:
		return types.Bool(a.crawler != nil && a.r.Addr.IsValid() && a.crawler.Verified(a.r.Addr.Unmap())), true
	}
	return nil, false
}

// Parent implements interpreter.Activation: there is none.
func (a *activation) Parent() interpreter.Activation { return nil }

// str is the string variable i, clipped and boxed once per request.
func (a *activation) str(i int, s string) any {
	if a.vals[i] == nil {
		a.vals[i] = types.String(clip(s))
	}
	return a.vals[i]
}

// methods are the common methods, boxed once.
var methods = func() map[string]any {
	out := map[string]any{}
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		out[m] = types.String(m)
	}
	return out
}()

// clip is s cut to at most maxString bytes, at a character's start: the
// size the cost estimate assumes.
func clip(s string) string {
	if len(s) <= maxString {
		return s
	}
	n := maxString
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// header reads a request header by lower-case name.
func (a *activation) header(name string) string {
	if a.r.Header == nil {
		return ""
	}
	return clip(a.r.Header(lower(name)))
}

// cookie reads a cookie.
func (a *activation) cookie(name string) string {
	if a.r.Cookie == nil {
		return ""
	}
	return clip(a.r.Cookie(name))
}

// param is one query parameter, decoded.
type param struct{ key, value string }

// param finds the first parameter key of the raw query without splitting
// it into a map: no allocation unless a key or value is escaped.
func (a *activation) param(key string) (string, bool) {
	q := clip(a.r.Query)
	for q != "" {
		var kv string
		kv, q, _ = strings.Cut(q, "&")
		k, v, _ := strings.Cut(kv, "=")
		if k != key {
			if !strings.ContainsAny(k, "%+") {
				continue
			}
			if uk, err := url.QueryUnescape(k); err != nil || uk != key {
				continue
			}
		}
		if strings.ContainsAny(v, "%+") {
			uv, err := url.QueryUnescape(v)
			if err != nil {
				continue
			}
			v = uv
		}
		return v, true
	}
	return "", false
}

// queryParams is every query parameter, in order, a repeated key once
// (its first value).
func (a *activation) queryParams() []param {
	if len(a.query) > 0 || a.r.Query == "" {
		return a.query
	}
	seen := map[string]bool{}
	q := clip(a.r.Query)
	for q != "" && len(a.query) < maxEntries {
		var kv string
		kv, q, _ = strings.Cut(q, "&")
		k, v, _ := strings.Cut(kv, "=")
		uk, err1 := url.QueryUnescape(k)
		uv, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil || seen[uk] {
			continue
		}
		seen[uk] = true
		a.query = append(a.query, param{uk, uv})
	}
	return a.query
}

// lower is name in lower case (ASCII), without allocating when it is.
func lower(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(name)
		}
	}
	return name
}
