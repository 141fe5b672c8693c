package shopper

import (
	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
)

// doorCounter counts for the report (*report.Refusals: a node-local map
// flushed to Redis every second, no Redis on the request path): refusals
// by reason (Add) and the requests each door rule decided (Match).
type doorCounter interface {
	Add(ev, reason string)
	Match(ev, rule string)
}

// countRule counts verdict v for the report's matches per rule when a
// rule decided it (v.Rule). ask calls it once for each step that asks the
// door, so a request counts at most once a step.
func (s *API) countRule(cfg *event.Config, v door.Verdict) {
	if v.Rule != "" && s.deps.Refusals != nil {
		s.deps.Refusals.Match(cfg.ID, v.Rule)
	}
}
