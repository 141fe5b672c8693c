package event

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// Friction where identity is cheap. A node in anonymous mode names a
// visitor by a cookie it mints for anyone who asks, so one script can be
// a thousand shoppers: in a lottery each of them is another ticket in the
// draw. Two defaults make that cost something, for events whose staff have
// not chosen otherwise:
//
//   - a per-IP join budget (DefaultJoinIP), for every event;
//   - a proof of work on join, for lotteries.
//
// Where the shop names its users (header and jwt modes) both stay off by
// default: identities are the shop's accounts, join is idempotent per
// account, and anteroom usually sees a gateway's address, not the
// shopper's. Staff turn either on or off per event; the stored
// configuration keeps "default" (join.ip per_second 0, pow.enabled null)
// apart from "off" (per_second -1, false), so a default can change without
// rewriting events.

// DefaultJoinIP is the per-IP join budget of an event that leaves join.ip
// at its default on a node with anonymous visitors: 10 joins at once from
// one address (IPv6: one /64), then one every 10 seconds (6 a minute).
//
// The burst covers a household or a small office behind one NAT joining
// at the same moment, each browser once (a joiner refused for a missing
// proof of work spends nothing); a café or a carrier-grade NAT queues its
// later shoppers for a few seconds each, told when by Retry-After. A
// script minting identities gets 10 tickets an address, then 6 a minute,
// each after a proof of work in a lottery, instead of as many as it asks.
// Staff expecting crowds behind shared addresses (a campus, a mobile
// carrier without IPv6) raise it or turn it off.
var DefaultJoinIP = Rate{PerSecond: 0.1, Burst: 10}

// JoinIPRate is the per-IP join budget in force for c on a node whose
// visitors are anonymous or not: the one staff set, else the default.
func (c *Config) JoinIPRate(anonymous bool) Rate {
	switch {
	case c.Limits.Join.IP != (Rate{}):
		return c.Limits.Join.IP
	case anonymous:
		return DefaultJoinIP
	}
	return Off
}

// BusyNetworkFactor is how many times join.ip's rate and burst the
// default limits.busy_network is.
const BusyNetworkFactor = 10

// BusyNetworkRate is the per-IP ceiling in force for c of the joins a door
// rule lets past join.ip after a solved challenge (Limits.BusyNetwork):
// the one staff set, else BusyNetworkFactor times JoinIPRate; Off when
// join.ip is off (no join is then over it).
func (c *Config) BusyNetworkRate(anonymous bool) Rate {
	if c.Limits.BusyNetwork.On() {
		return c.Limits.BusyNetwork
	}
	ip := c.JoinIPRate(anonymous)
	if !ip.On() {
		return Off
	}
	return Rate{PerSecond: ip.PerSecond * BusyNetworkFactor, Burst: max(1, ip.Burst) * BusyNetworkFactor}
}

// PoWRequired reports whether join asks for a proof of work in c on a
// node whose visitors are anonymous or not: as staff set it, else for
// lotteries with anonymous visitors.
func (c *Config) PoWRequired(anonymous bool) bool {
	return c.Limits.PoW.Enabled.Or(anonymous && c.Mode == Lottery)
}

// Switch is an on/off setting that may be left to its default. Its JSON
// is true, false, or null for the default; absent is the default too. The
// zero value is the default.
type Switch int8

// The values of a Switch.
const (
	SwitchDefault Switch = iota
	SwitchOn
	SwitchOff
)

// Or is the switch's value, def for the default.
func (s Switch) Or(def bool) bool {
	switch s {
	case SwitchOn:
		return true
	case SwitchOff:
		return false
	}
	return def
}

// MarshalJSON writes true, false or null.
func (s Switch) MarshalJSON() ([]byte, error) {
	switch s {
	case SwitchOn:
		return []byte("true"), nil
	case SwitchOff:
		return []byte("false"), nil
	}
	return []byte("null"), nil
}

// UnmarshalJSON reads true, false or null (the default); anything else is
// a *json.UnmarshalTypeError, which the decoder names the field of.
func (s *Switch) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "true":
		*s = SwitchOn
	case "false":
		*s = SwitchOff
	case "null":
		*s = SwitchDefault
	default:
		return &json.UnmarshalTypeError{Value: "non-boolean", Type: reflect.TypeFor[bool]()}
	}
	return nil
}
