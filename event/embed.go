package event

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// MaxFrameAncestors bounds an event's frame_ancestors list.
const MaxFrameAncestors = 16

// Embedding. By default no page may frame the waiting room (CSP
// frame-ancestors 'none' and X-Frame-Options: DENY). FrameAncestors names
// the origins that may: each entry is one origin, exactly as CSP's
// frame-ancestors matches it,
//
//	https://shop.example          https, a host, the default port
//	https://shop.example:8443     an explicit port
//	https://*.shop.example        any subdomain of shop.example (not
//	                              shop.example itself; at least two labels
//	                              after the wildcard, and not a public
//	                              suffix: *.co.uk or *.github.io would let
//	                              anyone's site frame the room)
//	http://localhost:3000         http only for a loopback host
//	                              (localhost, 127.0.0.1, [::1]), for
//	                              development
//
// and nothing else: no path (not even a trailing "/"), query, fragment,
// credentials, bare "*", other schemes or CSP keywords ('self', 'none').
// Scheme and host compare case-insensitively, as in CSP. originProblem is strict about the
// characters, so an entry can never add a directive to the page's
// Content-Security-Policy header.

// Embeddable reports whether some origin may frame the event's pages.
func (c *Config) Embeddable() bool { return len(c.FrameAncestors) > 0 }

// validateFrameAncestors checks every entry is an origin (see Embedding).
func (c *Config) validateFrameAncestors() error {
	if len(c.FrameAncestors) > MaxFrameAncestors {
		return fmt.Errorf("%w: frame_ancestors: at most %d origins", ErrInvalid, MaxFrameAncestors)
	}
	for i, o := range c.FrameAncestors {
		if why := originProblem(o); why != "" {
			return fmt.Errorf("%w: frame_ancestors[%d] %q is not an origin: %s (want https://host or https://host:port, e.g. https://shop.example)",
				ErrInvalid, i, clip(o, 100), why)
		}
	}
	return nil
}

// originProblem says why o is not an allowed frame ancestor, or "".
func originProblem(o string) string {
	if len(o) > 300 {
		return "longer than 300 bytes"
	}
	o = strings.ToLower(o)
	scheme, rest, ok := strings.Cut(o, "://")
	if !ok {
		return "no scheme"
	}
	if scheme != "https" && scheme != "http" {
		return "the scheme must be https"
	}
	if strings.ContainsAny(rest, "/?#") {
		return "an origin has no path, query or fragment"
	}
	if strings.Contains(rest, "@") {
		return "an origin has no credentials"
	}
	host, port := rest, ""
	if strings.HasPrefix(rest, "[") { // [IPv6]:port
		end := strings.Index(rest, "]")
		if end < 0 {
			return "an unclosed IPv6 bracket"
		}
		host, port = rest[1:end], strings.TrimPrefix(rest[end+1:], ":")
		if rest[end+1:] != "" && !strings.HasPrefix(rest[end+1:], ":") {
			return "text after the host"
		}
		if ip := net.ParseIP(host); ip == nil || ip.To4() != nil {
			return "not an IPv6 address in brackets"
		}
	} else if h, p, found := strings.Cut(rest, ":"); found {
		host, port = h, p
		if port == "" {
			return "an empty port"
		}
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return "the port must be a number from 1 to 65535"
		}
	}
	if !strings.HasPrefix(rest, "[") {
		if why := hostProblem(host); why != "" {
			return why
		}
	}
	if scheme == "http" && !loopback(host) {
		return "http is allowed only for localhost, 127.0.0.1 and [::1]"
	}
	return ""
}

// hostProblem checks a DNS name, an IPv4 address, or *. followed by a
// name of at least two labels.
func hostProblem(host string) string {
	if host == "" {
		return "no host"
	}
	if name, ok := strings.CutPrefix(host, "*."); ok {
		if net.ParseIP(name) != nil || strings.Count(name, ".") < 1 {
			return "a wildcard needs a domain of at least two labels after it (https://*.shop.example)"
		}
		// The public suffix list, both its ICANN and its private
		// section: anyone can register a site under co.uk or github.io.
		if ps, _ := publicsuffix.PublicSuffix(name); ps == name {
			return "a wildcard over a public suffix (" + name + ") would let anyone's site frame the room; name your own domain (https://*.shop.example)"
		}
		host = name
	}
	if net.ParseIP(host) != nil {
		return ""
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "a host label is empty or longer than 63 bytes"
		}
		for j := 0; j < len(l); j++ {
			switch ch := l[j]; {
			case ch >= 'a' && ch <= 'z', ch >= '0' && ch <= '9':
			case ch == '-' && j > 0 && j < len(l)-1:
			case ch == '*':
				return "a wildcard only as the whole first label (https://*.shop.example)"
			default:
				return "the host has a character other than a-z, 0-9, '-' and '.'"
			}
		}
	}
	return ""
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
