package rules

import (
	"net/netip"
	"strings"
	"time"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
)

// fakeLists is a door.Lists of fixed members: users answer Maybe (as a
// filter does), networks Present.
type fakeLists struct {
	users    map[string]map[string]bool
	networks map[string][]netip.Prefix
}

func (l fakeLists) User(list, user string) door.Membership {
	if l.users[list][user] {
		return door.Maybe
	}
	return door.Absent
}

func (l fakeLists) Addr(list string, addr netip.Addr) door.Membership {
	for _, p := range l.networks[list] {
		if p.Contains(addr) {
			return door.Present
		}
	}
	return door.Absent
}

func (fakeLists) Hash(user string) uint64 { return uint64(len(user)) }

// fakeCrawlers verifies a fixed set of addresses.
type fakeCrawlers map[netip.Addr]bool

func (c fakeCrawlers) Verified(addr netip.Addr) bool { return c[addr] }

var testLists = fakeLists{
	users: map[string]map[string]bool{"vip": {"ann": true}, "ev.friends": {"bob": true}},
	networks: map[string][]netip.Prefix{
		"office": {netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8:1::/48")},
	},
}

// request is a described request: headers by any case, cookies by name.
func request(method, path, query, ip, user string, headers, cookies map[string]string) *door.Request {
	hs := map[string]string{}
	for k, v := range headers {
		hs[strings.ToLower(k)] = v
	}
	r := &door.Request{Method: method, Host: "shop.example", Path: path, Query: query, User: user,
		Now:    time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC),
		Header: func(name string) string { return hs[strings.ToLower(name)] },
		Cookie: func(name string) string { return cookies[name] },
	}
	if ip != "" {
		r.Addr = netip.MustParseAddr(ip)
	}
	return r
}

// sale is a configuration of id ev at version with rules.
func sale(ev string, version int64, rules ...event.Rule) *event.Config {
	return &event.Config{ID: ev, Version: version, Door: event.Door{Rules: rules}}
}

// rule is a rule named name.
func rule(name, when, then string) event.Rule { return event.Rule{Name: name, When: when, Then: then} }
