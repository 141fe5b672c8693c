// Package admission owns how fast people get in. StepFor is the rule, pure
// and table-tested: the rate × each lane's share, the holds (paused, sold
// out, the shop's health), a lottery's units and max_active's caps, and the
// most one step may credit. The Frontier then takes each step: positions
// ≤ F are admitted, and F advances at a fixed rate of present people from
// the moment the window closes, driven by a leaderless Redis script every
// node calls on its tick. admission also answers a status poll from a
// node's view of a sale (Decide, Sale), without Redis, its ETA by one
// pure rule (ETA) on the pace the node measured (Measure); keeping that view
// fresh is package sale's job, which calls StepFor and Advance on its tick.
//
// The model, all in advance.lua, one step per tick and event:
//
//   - An admission clock runs while admission is possible and stands still
//     while it is held (paused, or sold out). The rate and the no-show grace
//     are measured on it, so a hold neither admits nor credits no-shows, and
//     admission resumes at the rate from where it stopped.
//   - One step credits at most Step.MaxCredit of time (ten ticks, at least
//     a second): after a gap with no step — Redis unreachable or paused,
//     every node stopped — admission resumes at the rate, it does not admit
//     rate × the gap at once. The admission clock moves by what was credited.
//   - A position admitted longer than the grace ago whose holder fetched no
//     admission token is a no-show, and F moves one further. A no-show who
//     fetches the token later is counted back: the next admissions wait.
//     With max_active a late no-show is held instead (Reading.HeldLog;
//     package sale keeps each node's copy): no token until the step lets
//     them in, first, within the rate and the caps.
//   - Admission starts at the start as the step passes it (Step.Start):
//     staff who move the start earlier get admission from the new start,
//     and moving it later gives no step counted from the old one.
//   - F never moves back and never passes the number who joined (with
//     join shards: who hold a settled position; see queue.Order, which
//     each node reads from every shard on its tick, ReadOrder).
//   - Caps count people. With max_active, F stops while max_active people
//     are active: admitted and not yet present (within the grace), present
//     with an unexpired admission not yet used for a claim, or holding a
//     pending claim (counted by user: several claims are one person). A
//     lottery's F is at most no-shows + units on sale + units released,
//     so released units go to the next drawn positions.
//   - Admission by checkout capacity: with max_active, the shop may
//     report a checkout session finished by its admission token's jti
//     (Frontier.Finish; the node that issued the token maps the jti to the
//     position on its next tick, sale.Snapshots.Session). A finished
//     position never counts as active again. The rate still bounds every advance:
//     the caps bank no credit, so room made all at once is filled at the
//     rate.
//   - A shop health hold (Health, with the sale's shop.health) holds
//     admission like a pause, apart from it: staff pause and the health
//     hold are two flags, and either holds.
//   - The failover fence of max_active: the frontier hash records the
//     Redis replication id the count of active people is kept on. A step
//     (or a safety-net room's Enter) that finds another one — a promoted
//     replica, a server restored from an older copy — holds admission
//     like a pause for one admission TTL plus the grace: the writes lost
//     with the old primary may have counted admissions whose tokens,
//     verified offline, stay valid until then. Presence marks, renewals
//     and claims are recorded meanwhile.
//
// A waiting status poll never touches Redis: a node records admission tokens issued
// (Step.Present) and claims granted (Step.Claimed) in memory and hands them to the
// next tick's script, which records presence in a bitmap and admissions in
// a sorted set of deadlines; the tick also reads the positions holding a
// pending claim from the claim store when max_active is set. Marks a failed
// tick took are put back; the script reads every key before it writes, so a
// retry counts each mark exactly once. Under max_active the token is
// counted at once as well (Activate: the position active until the
// token's expiry, one Redis call per token minted), so a node killed
// before its next tick leaves no valid token uncounted: its lost presence
// mark only makes the position a no-show, whose place stays taken while
// the token lasts.
package admission

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/anteroom/anteroom/internal/luascript"
	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

//go:embed advance.lua
var advanceLua string

// MaxNoShowChecks bounds how many positions one Advance call checks for
// no-shows.
const MaxNoShowChecks = 4096

// DefaultMaxCredit is the most time one Advance credits when Step.MaxCredit
// is zero: MaxCreditFor the default 100 ms tick.
const DefaultMaxCredit = time.Second

// MaxCreditFor is the most time one step credits for callers that advance
// every tick: ten ticks, at least DefaultMaxCredit. Several nodes ticking
// together credit the time between their steps, which is shorter.
func MaxCreditFor(tick time.Duration) time.Duration { return max(10*tick, DefaultMaxCredit) }

// Frontier advances and reads an event's admission frontier. It is safe for
// concurrent use.
type Frontier struct {
	rdb      redis.Scripter
	advance  *redis.Script
	enter    *redis.Script
	finish   *redis.Script
	sessions *redis.Script
	activate *redis.Script
	shards   *queue.Joiner
	// highs is the highest position each room counter gave this node
	// (Enter reports it: enter.lua's failover fence).
	highs *queue.Highs
}

// NewFrontier returns a Frontier on rdb.
func NewFrontier(rdb redis.Scripter) *Frontier {
	return &Frontier{rdb: rdb, advance: luascript.New(advanceLua), enter: luascript.New(enterLua), finish: luascript.New(finishLua),
		sessions: luascript.New(sessionsLua), activate: luascript.New(activateLua), shards: queue.NewJoiner(rdb),
		highs: queue.NewHighs()}
}

// Step is one advance of one event's frontier.
type Step struct {
	// Start is when admission begins (the window's end).
	Start time.Time
	// Rate is admissions of present people per second.
	Rate float64
	// Hold stops admission (paused or sold out): the admission clock
	// stands still, so neither the rate nor no-shows admit anyone, and
	// admitted people who could not fetch a token keep their grace.
	Hold bool
	// Grace is how long (on the admission clock) an admitted position may
	// take to fetch its admission token before it counts as a no-show.
	Grace time.Duration
	// Lottery, when true, caps the frontier at no-shows + Units.
	Lottery bool
	// Units is what a lottery may still sell: units on sale plus units
	// released back to stock.
	Units int64
	// MaxActive, when positive, caps the people who are active: admitted
	// and not yet present (within their grace), holding an unexpired,
	// unused admission, or holding a pending claim.
	MaxActive int64
	// AdmissionTTL is how long an issued admission token lasts; a present
	// position stays active that long after its latest token.
	AdmissionTTL time.Duration
	// Present are positions whose admission token was issued since the
	// last step.
	Present []int64
	// PresentWait holds, for each of Present, the seconds its holder
	// waited from joining to the token (-1: unknown); nil: all unknown.
	PresentWait []int64
	// Claimed are positions granted a claim since the last step: their
	// admission is used.
	Claimed []int64
	// ClaimedWait holds, for each of Claimed, the seconds from the
	// admission token to the grant (-1: unknown); nil: all unknown.
	ClaimedWait []int64
	// Pending are the holders of pending claims now, one per claim (read
	// only when MaxActive is set). They count as people by user: a person
	// with several pending claims is one, and so is each bypass pass
	// holder, though all share PassPosition.
	Pending []Holder
	// MaxCredit is the most time one step credits to the rate and the
	// admission clock: after a gap with no step (Redis unreachable, every
	// node stopped) admission resumes at the rate instead of admitting
	// rate × the gap at once. Set it to a few of the callers' tick
	// intervals (MaxCreditFor): a step late by more than it admits less
	// than the rate.
	//
	// Default: DefaultMaxCredit
	MaxCredit time.Duration
	// HealthChecked, when true, also holds admission while the shop's
	// health check fails (see Health): Reading.HealthHeld says so.
	HealthChecked bool
	// Order, for a queue of join shards, is the node's view of it: the
	// frontier then never passes Order.Settled() and W is Order.Window().
	// Nil for a queue on one slot, whose keys the script reads itself.
	Order *queue.Order
	// Lane is the index of the lane advanced (see queue/lanes.go): the
	// script runs unchanged on the lane's own keys. 0 is the default lane.
	Lane int
	// Late are held positions (credited no-shows, see Held) whose holder
	// asked for a token since the last step: with MaxActive they are let
	// in, oldest first, within the rate and the caps.
	Late []int64
	// HeldFrom is the caller's offset in the held log: the reading
	// carries the entries from there (Reading.HeldLog).
	HeldFrom int64
	// ViewUntil, when set, is the Redis TIME until which the view the step
	// comes from may act (Sale.ConfigAt + event.MaxViewAge): after it the
	// script refuses the step (queue.ErrStaleView), before any write, so a view
	// that a save overtook never starts admission or freezes a window at a
	// start the store no longer has. Zero: no bound.
	ViewUntil time.Time
}

// Reading is the state of one event's queue at one Redis instant.
type Reading struct {
	// Frontier is F: every position ≤ Frontier is admitted.
	Frontier float64
	// Joined is how many people have joined; with join shards, Advance
	// reports how many hold a settled position (queue.Order.Settled).
	Joined int64
	// Window is the frozen window size W, or 0 while the window is open.
	Window int64
	// WindowFrozen is true once W is fixed.
	WindowFrozen bool
	// NoShows is how many admitted positions never fetched a token.
	NoShows int64
	// Active is how many people are active (counted only with MaxActive).
	Active int64
	// ServerTime is Redis TIME when the reading was taken.
	ServerTime time.Time
	// HealthHeld is true while the shop's health check holds admission
	// (only with Step.HealthChecked); HealthGen counts the hold's changes.
	HealthHeld bool
	HealthGen  int64
	// Checked is the highest position checked for no-shows: every
	// position at most Checked that never fetched a token is a no-show.
	Checked int64
	// HeldLen is the length of the held log and HeldLog its entries from
	// Step.HeldFrom: q when position q was credited as a no-show under
	// max_active (held: no token until let in), -q when it was let in or
	// counted back.
	HeldLen int64
	HeldLog []int64
	// HeldEpoch names the server the held log was read on (with
	// MaxActive: the first 52 bits of its replication id; 0 when unknown).
	// A copy of the log read on another server is read again from its
	// start: after a failover the promoted server's log may differ from
	// the old primary's past what it copied, at any length.
	HeldEpoch int64
}

// Advance moves event ev's frontier by rate × time since the last advance
// (at most s.MaxCredit) plus the no-shows found, within the caps, records the present and claimed
// positions, and returns the new reading.
func (f *Frontier) Advance(ctx context.Context, ev string, s Step) (Reading, error) {
	k := queue.KeysForLane(ev, s.Lane)
	hold := 0
	if s.Hold {
		hold = 1
	}
	units := int64(-1)
	if s.Lottery {
		units = max(s.Units, 0)
	}
	joined, window := int64(-1), int64(-1)
	if s.Order != nil {
		joined, window = s.Order.Settled(), s.Order.Window()
	}
	credit := s.MaxCredit
	if credit <= 0 {
		credit = DefaultMaxCredit
	}
	checked := 0
	if s.HealthChecked {
		checked = 1
	}
	args := make([]any, 0, 19+len(s.Late)+2*len(s.Present)+2*len(s.Claimed)+2*len(s.Pending))
	args = append(args, s.Start.UnixMilli(), s.Rate, hold, s.Grace.Milliseconds(), MaxNoShowChecks,
		units, max(s.MaxActive, 0), s.AdmissionTTL.Milliseconds(), len(s.Present), len(s.Claimed), joined, window,
		max(credit.Milliseconds(), 1), checked, untilMillis(s.ViewUntil), len(s.Late), max(s.HeldFrom, 0),
		f.highs.High(k.Seq), queue.FailoverSpan.Milliseconds())
	for _, ps := range [][]int64{s.Late, s.Present, waitsOf(s.Present, s.PresentWait), s.Claimed, waitsOf(s.Claimed, s.ClaimedWait)} {
		for _, p := range ps {
			args = append(args, p)
		}
	}
	for _, h := range s.Pending {
		args = append(args, h.Pos, h.User)
	}
	tag := queue.LaneTag(ev, 0)
	keys := []string{frontierKey(ev), k.Seq, k.Window, presentKey(ev), historyKey(ev), activeKey(ev), tallyKey(ev), claimedKey(ev), finishedKey(ev), healthKey(ev)}
	if s.Lane > 0 { // the lane's own keys; its waits go to the event's tally, its hold follows the event's health
		tag = queue.LaneTag(ev, s.Lane)
		keys = []string{tag + "adm", k.Seq, k.Window, tag + "present", tag + "hist", tag + "act", tallyKey(ev), tag + "claimed", tag + "fin", healthKey(ev)}
	}
	keys = append(keys, tag+"late", tag+"readmit", tag+"heldlog", k.Fence)
	res, err := f.advance.Run(ctx, f.rdb, keys, args...).Int64Slice()
	if err != nil && queue.IsStaleView(err) {
		return Reading{}, fmt.Errorf("advance %s: %w", ev, queue.ErrStaleView)
	}
	if err != nil {
		return Reading{}, fmt.Errorf("advance %s: %w", ev, err)
	}
	if len(res) < 11 {
		return Reading{}, fmt.Errorf("advance %s: unexpected reply %v", ev, res)
	}
	return Reading{
		Frontier:     float64(res[0]) / 1000,
		Joined:       res[1],
		Window:       max(res[2], 0),
		WindowFrozen: res[2] >= 0,
		ServerTime:   time.UnixMilli(res[3]),
		NoShows:      res[4],
		Active:       res[5],
		HealthHeld:   res[6] == 1,
		HealthGen:    res[7],
		Checked:      res[8],
		HeldLen:      res[9],
		HeldEpoch:    res[10],
		HeldLog:      res[11:],
	}, nil
}

// untilMillis is t in unix ms, 0 for the zero time (no bound).
func untilMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.UnixMilli(), 1)
}

func frontierKey(ev string) string { return "ar:{" + ev + "}:adm" }
func presentKey(ev string) string  { return "ar:{" + ev + "}:present" }
func historyKey(ev string) string  { return "ar:{" + ev + "}:hist" }
func activeKey(ev string) string   { return "ar:{" + ev + "}:act" }
func finishedKey(ev string) string { return "ar:{" + ev + "}:fin" }
func healthKey(ev string) string   { return "ar:{" + ev + "}:health" }
func sessionKey(ev, jti string) string {
	return "ar:{" + ev + "}:jti:" + jti
}
