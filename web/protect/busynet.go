package protect

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// A busy network. Behind a carrier-grade NAT many people share one
// address, and the per-IP join budget (limits.join.ip) refuses all but
// the first few of them. Join answers a join refused by that bucket alone
// with a *BusyNetwork, its 429; the shopper API asks the door again
// (door.Request.Busy) and, when a rule challenges a busy network (the
// rule function busy_network()), calls JoinBusy instead of answering the
// 429:
//
//  1. the challenge: the sale's captcha when it has one (the provider
//     spends a token once), else a proof of work at the sale's
//     difficulty (GET /events/{id}/challenge), bound to the caller's user
//     and the sale like any other: forged, expired or another's, it is
//     refused 403 pow_required;
//  2. the proof of work is spent: bound in Redis to this join alone
//     (limit.KindSolution, until the challenge expires), so a replay,
//     even the same user's, is refused 403 pow_required. One solution
//     buys one join past the budget, and nobody drains the ceiling below
//     without a solution for each join;
//  3. the ceiling, limits.busy_network (event.Config.BusyNetworkRate): a
//     per-IP bucket of its own (budget "join.busy"), then the event and
//     global join budgets, which the refused join never reached. The
//     caller's user and device buckets passed in Join. With a captcha the
//     ceiling is spent before the provider's call (a flood of tokens
//     from one address costs at most the ceiling's calls) and the shared
//     budgets after it.
//
// From one address a sale thus takes at most join.ip's budget plus
// busy_network's, the second one solved challenge a join. A join under
// its per-IP budget never gets here and pays nothing more; one over it
// pays the challenge's check, one Redis call to spend it and the
// limiter's two phases. A Redis failure spending a solution answers 503
// degraded: nothing joins on a solution that might be spent already.

// BusyBudget is the limiter budget of the ceiling of joins past the
// per-IP budget (limit.Rule.Budget).
const BusyBudget = "join.busy"

// BusyNetwork is Join's refusal of a join over its per-IP budget alone
// (no other bucket refused): answered as its 429 (the Problem), unless a
// door rule challenges a busy network and JoinBusy lets it on.
type BusyNetwork struct{ *kit.Problem }

// Unwrap is the 429, which kit.ToProblem answers.
func (b *BusyNetwork) Unwrap() error { return b.Problem }

// BusyNetwork marks the refusal for its consumers (web/shopper asks
// errors.As for an error with this method).
func (*BusyNetwork) BusyNetwork() bool { return true }

// JoinBusy runs the defences of a join that Join refused with a
// *BusyNetwork and that a door rule sends to a challenge instead: the
// challenge, the spending of its solution and the ceiling (the steps
// above). It answers nil to let the join on, else the problem to answer.
// Call it only after Join's *BusyNetwork: it does not repeat Join's
// invite, device and user checks.
func (s *Edge) JoinBusy(c *fiber.Ctx, cfg *event.Config, user string) error {
	ceiling := cfg.BusyNetworkRate(s.anonymous)
	if s.deps.Limiter == nil || !ceiling.On() {
		return kit.RateLimited("join requests per ip", time.Second) // no ceiling: never unlimited
	}
	perIP := limit.Rule{Budget: BusyBudget, Dim: limit.IP, Event: cfg.ID, Value: limiterIP(s.proxies.ClientIP(c)), Limit: toLimit(ceiling)}
	shared := []limit.Rule{
		{Budget: "join", Dim: limit.Global, Limit: s.cfg.GlobalJoin},
		{Budget: "join", Dim: limit.Event, Event: cfg.ID, Limit: toLimit(cfg.Limits.Join.Event)},
	}
	if !cfg.Limits.Captcha.On() {
		if err := s.spendPoW(c, cfg, user); err != nil {
			return err
		}
		return s.allowBusy(c, append(shared, perIP)...)
	}
	// A captcha costs a call to its provider: the ceiling is spent before
	// it, so a flood of tokens from one address makes at most the
	// ceiling's calls, and the shared budgets after it, so a refused
	// token spends none of them.
	if c.Get(CaptchaHeader) == "" {
		return captchaProblem("captcha_required", "many people join from your network: pass the challenge on the page and send its token in "+CaptchaHeader)
	}
	if err := s.allowBusy(c, perIP); err != nil {
		return err
	}
	if err := s.checkCaptcha(c, cfg); err != nil {
		return err
	}
	return s.allowBusy(c, shared...)
}

// allowBusy spends rules' tokens: nil, or the 429 naming the budget that
// refused (the ceiling as "challenged join requests per ip").
func (s *Edge) allowBusy(c *fiber.Ctx, rules ...limit.Rule) error {
	ctx, cancel := s.ctx(c)
	defer cancel()
	d := s.deps.Limiter.Allow(ctx, rules...)
	switch {
	case d.Allowed:
		return nil
	case d.Dim == limit.IP:
		return kit.RateLimited("challenged join requests per ip (limits.busy_network)", d.RetryAfter)
	}
	return kit.RateLimited("join requests per "+string(d.Dim), d.RetryAfter)
}

// spendPoW verifies the caller's proof of work for a busy network and
// binds it to this join, once.
func (s *Edge) spendPoW(c *fiber.Ctx, cfg *event.Config, user string) error {
	h := c.Get(PoWHeader)
	if h == "" {
		return powProblem("many people join from your network: solve GET /events/" + cfg.ID + "/challenge and send " + PoWHeader + " to join")
	}
	now := s.now()
	if p := s.pow.verify(h, cfg.ID, user, cfg.Limits.PoW.Bits, now); p != nil {
		return p
	}
	challenge, _, _ := strings.Cut(h, ":")
	f := strings.Split(challenge, ".") // verified: six fields, the third the expiry
	exp, _ := strconv.ParseInt(f[2], 10, 64)
	if s.deps.Reservations == nil {
		return kit.RetryLater("degraded", "a busy network's challenge cannot be checked on this node", 5)
	}
	var once [16]byte
	_, _ = rand.Read(once[:])
	ctx, cancel := s.ctx(c)
	defer cancel()
	// Kept a minute past the challenge's expiry: a node whose clock is
	// behind still finds it spent.
	ttl := time.Unix(exp, 0).Sub(now) + time.Minute
	err := s.deps.Reservations.Reserve(ctx, limit.KindSolution, cfg.ID, challenge, hex.EncodeToString(once[:]), ttl)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, limit.ErrTaken):
		return powProblem("this challenge was solved for another join already: fetch a new one")
	}
	s.cfg.Log.Warn("spend a challenge", "request_id", kit.RequestID(c), "event", cfg.ID, "err", err)
	return kit.RetryLater("degraded", "a backing service is not answering; retry shortly", 1)
}
