package protect

import "github.com/anteroom/anteroom/event"

// anonymousIdentity reports whether id names callers by a cookie minted
// for anyone who asks, where a new identity costs nothing: event limits
// left at their default then add friction (event.Config.JoinIPRate,
// event.Config.PoWRequired).
func anonymousIdentity(id Identity) bool {
	switch id.(type) {
	case VisitorIdentity, *VisitorIdentity:
		return true
	}
	return false
}

// Friction is what an event's join defences amount to on this node,
// for the staff console: the defaults resolved against the identity mode.
type Friction struct {
	// AnonymousVisitors is true when this node names callers by a visitor
	// cookie, which is what the defaults depend on.
	AnonymousVisitors bool `json:"anonymous_visitors"`
	// JoinIP is the per-IP join budget in force (per_second -1: off).
	JoinIP event.Rate `json:"join_ip"`
	// JoinIPDefault is the budget an event left at the default gets here.
	JoinIPDefault event.Rate `json:"join_ip_default"`
	// PoWRequired is whether join asks for a proof of work.
	PoWRequired bool `json:"pow_required"`
	// BusyNetwork is the per-IP ceiling in force of joins a door rule
	// lets past JoinIP after a solved challenge (busy_network()).
	BusyNetwork event.Rate `json:"busy_network"`
}

// FrictionOf resolves cfg's join defences on this node.
func (s *Edge) FrictionOf(cfg *event.Config) *Friction {
	def := event.Config{Mode: cfg.Mode}
	return &Friction{
		AnonymousVisitors: s.anonymous,
		JoinIP:            cfg.JoinIPRate(s.anonymous),
		JoinIPDefault:     def.JoinIPRate(s.anonymous),
		PoWRequired:       cfg.PoWRequired(s.anonymous),
		BusyNetwork:       cfg.BusyNetworkRate(s.anonymous),
	}
}
