package shopper

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/tokens"
	"github.com/gofiber/fiber/v2"
)

// The door (package door) is asked once per step, here: a join (a room's
// join is door.Room), the status poll and the basic page, the gate, a
// claim and a pass redemption (door.Claim: the claim the pass buys is
// judged the same). What each action does:
//
//	action       join                            status      gate              claim, pass
//	block        403 blocked                     403         403               403
//	not_eligible 403 not_eligible (sale's text)  403         403               403
//	challenge    the join's proof of work (or    as queue    as queue          as queue
//	             its captcha) even if the sale
//	             asks for none
//	bypass       admitted at once, without a     as queue    204, no token     as queue
//	             place (turnstile.Pass); a
//	             room's too
//	sink         an endless queue (sinkJoin)     DecideSunk  to the waiting    claim: 401 as an
//	                                                         page              invalid token;
//	                                                                           pass: pass_invalid
//
// A sale without rules or lists costs one branch (door.Door.Applies): no
// request is built, nothing allocated. The join's defences (Guard.Join:
// invite, proof of work, rate limits, captcha) run after the door — its
// "no" is the cheapest, node-local — for every action, a sink included:
// a sunk caller meets the same limits as anyone.

// request builds what the door sees of c: the request line, the client
// address by the trusted-proxy rule (kit.Proxies.ClientAddr), the caller,
// their identity-token claims (jwt mode: those the step read, and any
// other a rule reads, from the token verified again), the signals of sale
// cfg from their trusted sources (a rule's signals.<name>), the headers
// and cookies read from fasthttp's buffers, and now. Nothing is read
// until a rule asks. It must not outlive the handler.
func (s *API) request(c *fiber.Ctx, cfg *event.Config, user string, claims map[string][]string, now time.Time) *door.Request {
	r := &door.Request{
		Method: c.Method(), Host: c.Hostname(), Path: c.Path(), Query: string(c.Request().URI().QueryString()),
		Addr: s.deps.Proxies.ClientAddr(c), User: user, Claims: claims, Now: now,
		Header: func(name string) string { return c.Get(name) },
		Cookie: func(name string) string { return c.Cookies(name) },
	}
	if lc, ok := s.deps.Identity.(laneClaims); ok && user != "" {
		r.Claim = func(name string) ([]string, bool) {
			u, got, err := lc.UserClaims(c, []string{name})
			if err != nil || u != user {
				return nil, false
			}
			v, ok := got[name]
			return v, ok
		}
	}
	if sr, ok := s.deps.Guard.(signalReader); ok && user != "" {
		r.Signal = func(name string) bool { return sr.HasSignal(c, cfg, user, name) }
	}
	return r
}

// signalReader tells whether a request carries a sale's signal from its
// trusted source (web/protect's Edge), for the door rules' signals.
type signalReader interface {
	HasSignal(c *fiber.Ctx, cfg *event.Config, user, name string) bool
}

// ask is the door's verdict for the caller of c at step, and its refusal
// (door.ErrBlocked, a *door.NotEligibleError) or nil.
func (s *API) ask(c *fiber.Ctx, cfg *event.Config, user string, claims map[string][]string, now time.Time, step door.Step) (door.Verdict, error) {
	if !s.deps.Door.Applies(cfg) {
		return door.Verdict{}, nil
	}
	r := s.request(c, cfg, user, claims, now)
	if step == door.Gate {
		gateLine(c, r) // the protected request, as the proxy names it
	}
	v := s.deps.Door.Check(cfg, r, step)
	s.countRule(cfg, v) // the report's matches per rule (doorcount.go)
	return v, v.Err(cfg)
}

// joinStep is the door's step of a join to cfg.
func joinStep(cfg *event.Config) door.Step {
	if cfg.IsSafetyNet() {
		return door.Room
	}
	return door.Join
}

// challenged is cfg for the join's defences under verdict v: a challenge
// asks for the proof of work even of a sale that asks for none (unless
// its captcha already stands in the way).
func challenged(cfg *event.Config, v door.Verdict) *event.Config {
	if v.Action != door.Challenge || cfg.Limits.PoW.Enabled == event.SwitchOn || cfg.Limits.Captcha.On() {
		return cfg
	}
	cc := *cfg
	cc.Limits.PoW.Enabled = event.SwitchOn
	return &cc
}

// exactLists are the copies of v's exact lists in the slot user's join
// goes to at t, and user's keyed hash: the join script's check.
func (s *API) exactLists(cfg *event.Config, user string, t queue.Times, v door.Verdict) queue.Lists {
	if v.Exact.Empty() {
		return queue.Lists{}
	}
	tag := lists.JoinCopyTag(cfg.ID, user, t)
	l := queue.Lists{Hash: lists.Arg(s.deps.Door.Hash(user))}
	for _, name := range v.Exact.Block {
		l.Block = append(l.Block, lists.CopyKey(tag, name))
	}
	for _, name := range v.Exact.Eligible {
		l.Eligible = append(l.Eligible, lists.CopyKey(tag, name))
	}
	return l
}

// doorErr is the door's refusal for the join script's: queue.ErrBlocked
// and queue.ErrNotEligible become door.ErrBlocked and cfg's
// not_eligible (its message); any other error is err.
func doorErr(cfg *event.Config, err error) error {
	switch err {
	case queue.ErrBlocked:
		return door.ErrBlocked
	case queue.ErrNotEligible:
		return door.NotEligibleFor(cfg)
	}
	return err
}

// errSunkClaim refuses a sunk caller's claim as an expired token would be.
var errSunkClaim = fmt.Errorf("%w: no admission", tokens.ErrInvalid)

// joinPace remembers how long the latest real joins' script calls took,
// so that a sunk join waits as long as one of them, drawn at random: the
// same distribution, its tail included.
type joinPace struct {
	next atomic.Uint64
	took [32]atomic.Int64 // ns; 0: not yet
}

// spinUnder is the wait below which a sunk join yields in a loop
// instead of sleeping on a timer: an idle Go timer overshoots a short
// wait by most of a millisecond, which would set a sunk join apart from
// a real one (whose wait ends on the socket). The cost is the wait's CPU,
// under the join's rate limits.
const spinUnder = 2 * time.Millisecond

// observe records one real join's duration.
func (p *joinPace) observe(d time.Duration) {
	p.took[p.next.Add(1)%uint64(len(p.took))].Store(int64(d))
}

// wait sleeps as long as a real join's script call drawn at random (1 ms
// before any), or until ctx ends.
func (p *joinPace) wait(ctx context.Context) {
	d := time.Duration(p.took[rand.IntN(len(p.took))].Load())
	if d <= 0 {
		d = time.Duration(p.took[p.next.Load()%uint64(len(p.took))].Load())
	}
	if d <= 0 {
		d = time.Millisecond
	}
	if d < spinUnder {
		for deadline := time.Now().Add(d); time.Now().Before(deadline) && ctx.Err() == nil; {
			runtime.Gosched()
		}
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// sunkKey drifts a sunk user's wait (admission.SunkAhead): the same on
// every node.
func sunkKey(user string) uint64 { return uint64(queue.ShardOf(user, 1<<30)) }

// sinkJoin answers a sunk join as a join answers (joinAnswer): a ticket
// signed as sunk (tokens.Ticket.Sunk) at a plausible place at the back
// of its queue, after about as long as a real join takes, with no queue
// script: its only Redis calls were the join's defences. It is counted
// ("join.sink" in the report's refusals). lane is the caller's lane by
// their invite or claims (laneOf): the sunk ticket's number is in that
// lane (queue.Laned), as a real member's is, so the answer names it and
// every poll shows that lane's wait (admission.DecideSunk).
func (s *API) sinkJoin(c *fiber.Ctx, sale *admission.Sale, user string, lane int, now time.Time) error {
	ticket, seq, d, err := s.sink(c, sale, user, lane, now)
	if err != nil {
		return err
	}
	return s.joinAnswer(c, &sale.Config, ticket, seq, lane, d)
}

// sink is sinkJoin's step before the answer, shared with the basic
// page's join form: the sunk ticket (set as the ticket cookie), its
// number and its decision. The number is one past the node's view of
// the people in the caller's queue: in the default lane, of their join
// shard (drawn at random, as joins spread); in lane > 0, of that lane.
func (s *API) sink(c *fiber.Ctx, sale *admission.Sale, user string, lane int, now time.Time) (string, int64, admission.Decision, error) {
	cfg := &sale.Config
	if s.deps.Refusals != nil {
		s.deps.Refusals.Add(cfg.ID, "join.sink")
	}
	shards := max(cfg.JoinShards, 1)
	if cfg.IsSafetyNet() {
		shards = 1
	}
	seq := max(sale.Joined, 0)/int64(shards) + 1 + rand.Int64N(int64(shards))
	shard := 0
	if shards > 1 {
		shard = queue.ShardOf(user, shards)
	}
	if lane > 0 && lane <= len(cfg.Lanes) { // a lane is one queue on the event's slot
		var joined int64
		if lane <= len(sale.Lanes) {
			joined = max(sale.Lanes[lane-1].Joined, 0)
		}
		seq, shard = queue.Laned(lane, joined+1), 0
	}
	joined := now.Truncate(time.Second)
	ctx, cancel := s.ctx(c)
	s.pace.wait(ctx)
	cancel()
	ticket, err := s.signTicket(c, cfg, tokens.Ticket{Event: cfg.ID, User: user, Seq: seq, IssuedAt: joined, Sunk: true})
	if err != nil {
		return "", 0, admission.Decision{}, err
	}
	d := admission.DecideSunk(sale, queue.Place{Shard: shard, Seq: seq, Joined: joined}, sunkKey(user), now, rand.Float64)
	return ticket, seq, d, nil
}

// sunkStatus is the status decision of the holder of t when the door
// sinks them (or t is sunk), else ok is false.
func (s *API) sunkStatus(c *fiber.Ctx, sale *admission.Sale, t tokens.Ticket, now time.Time) (d admission.Decision, ok bool, err error) {
	cfg := &sale.Config
	v, err := s.ask(c, cfg, t.User, nil, now, door.Status)
	if err != nil || !t.Sunk && v.Action != door.Sink {
		return d, false, err
	}
	p := queue.Place{Shard: queue.ShardOf(t.User, cfg.JoinShards), Seq: t.Seq, Joined: t.IssuedAt}
	return admission.DecideSunk(sale, p, sunkKey(t.User), now, rand.Float64), true, nil
}
