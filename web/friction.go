package web

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

// frictionJSON is what an event's join defences amount to on this node,
// for the staff console: the defaults resolved against the identity mode.
type frictionJSON struct {
	// AnonymousVisitors is true when this node names callers by a visitor
	// cookie, which is what the defaults depend on.
	AnonymousVisitors bool `json:"anonymous_visitors"`
	// JoinIP is the per-IP join budget in force (per_second -1: off).
	JoinIP event.Rate `json:"join_ip"`
	// JoinIPDefault is the budget an event left at the default gets here.
	JoinIPDefault event.Rate `json:"join_ip_default"`
	// PoWRequired is whether join asks for a proof of work.
	PoWRequired bool `json:"pow_required"`
}

// friction resolves cfg's join defences on this node.
func (s *Server) friction(cfg *event.Config) *frictionJSON {
	def := event.Config{Mode: cfg.Mode}
	return &frictionJSON{
		AnonymousVisitors: s.edge.anonymous,
		JoinIP:            cfg.JoinIPRate(s.edge.anonymous),
		JoinIPDefault:     def.JoinIPRate(s.edge.anonymous),
		PoWRequired:       cfg.PoWRequired(s.edge.anonymous),
	}
}
