package web

import (
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// refusalCounter counts the requests join and claim refused, by reason,
// and the requests each door rule decided (Match, counted by package
// web/shopper) (*report.Refusals: node-local, flushed to Redis in the
// background).
type refusalCounter interface {
	Add(ev, reason string)
	Match(ev, rule string)
}

// refusalCodes are the problem codes of join and claim that count as a
// refusal in the report: the edge's defences and the sale's answers
// ("no"), not malformed requests or failures of a backing service.
var refusalCodes = map[string]bool{
	"rate_limited": true, "pow_required": true, "invite_required": true,
	"captcha_required": true, "captcha_failed": true, "captcha_unavailable": true, "sold_out": true,
	"not_selected": true, "limit_reached": true, "not_open": true, "forbidden": true,
	"untrusted_signal": true, "blocked": true, "not_eligible": true,
	"signal_limit": true, "bad_signal": true,
}

// countRefusal counts the problem a join or claim was answered with as a
// refusal of the event when it is one (refusalCodes): the JSON routes and
// the basic page's forms alike. Called by observe for an error status,
// after kit.ErrorHandler or the basic page's error page (both kit.Settle),
// whose problem it reads, so an error is mapped once.
func (s *Server) countRefusal(c *fiber.Ctx) {
	p, _ := c.Locals(kit.ProblemLocal).(*kit.Problem)
	if p == nil || s.deps.Refusals == nil {
		return
	}
	var stage string
	switch c.Route().Path {
	case "/events/:id/join", "/e/:id/basic/join":
		stage = "join."
	case "/events/:id/claim", "/e/:id/basic/claim":
		stage = "claim."
	default:
		return
	}
	sale, ok := kit.LoadedSale(c)
	if !ok {
		return
	}
	if refusalCodes[p.Code] {
		s.deps.Refusals.Add(sale.Config.ID, stage+p.Code)
	}
}
