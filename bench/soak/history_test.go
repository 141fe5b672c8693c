//go:build soak && linux

package soak

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// op is one request and its answer, as the client saw it. Faults and
// staff actions are recorded as ops too (User "-"), so that the history
// around a violation shows what the system was going through.
type op struct {
	Seq int
	// Start is when the request was sent (zero for what is not a
	// request); At when its answer came.
	Start   time.Time
	At      time.Time
	Sale    string
	User    string
	Kind    string // join, status, claim, replay, release, lookup, cancel, finish, room, fault, staff
	Node    string
	Lane    string // the shopper's lane ("" default), or "pass" for a bypass pass
	Key     string // the Idempotency-Key; on a cancel, "restock" when the unit returns
	Status  int
	Code    string
	ClaimID string
	Pos     int64
	State   string
	Retry   bool // Retry-After was set
	Err     string
	Note    string
	// Supply is the supply the history held the sale to at the answer.
	Supply int64
	// Door is the shopper's standing at the door ("" none, "blocked",
	// "bot", "offlist", "member") and Cohort the cohort they send
	// (door_test.go); Token that the answer carried an admission token.
	Door, Cohort string
	Token        bool
}

func (o op) String() string {
	ans := fmt.Sprintf("%d %s", o.Status, o.Code)
	if o.Err != "" {
		ans = "error " + o.Err
	}
	s := fmt.Sprintf("#%d %s %s %-7s %-6s %s", o.Seq, o.At.Format("15:04:05.000"), o.Sale, o.Kind, o.User, ans)
	for _, kv := range [][2]string{{"node", o.Node}, {"lane", o.Lane}, {"key", o.Key}, {"claim", o.ClaimID}, {"state", o.State}, {"door", o.Door}, {"cohort", o.Cohort}, {"note", o.Note}} {
		if kv[1] != "" {
			s += " " + kv[0] + "=" + kv[1]
		}
	}
	if o.Pos > 0 {
		s += fmt.Sprintf(" pos=%d", o.Pos)
	}
	if o.Retry {
		s += " retry-after"
	}
	if o.Token {
		s += " admission-token"
	}
	return s
}

// violation is a broken promise: what, and the ops it concerns.
type violation struct {
	What string
	At   time.Time
	Ops  []op
}

// history records every op and checks the promises that can be judged
// from the answers alone as each answer arrives (the rest are judged by
// the sampler and the final audit, see checks_test.go). The first
// violation is sent on found; the run stops there.
type history struct {
	mu    sync.Mutex
	ops   []op
	found chan violation
	stop  bool

	sales map[string]*saleBook
	// promotions are the instants Redis replicas were promoted: joins
	// answered before one may be lost (asynchronous replication), though
	// never their sequence numbers given again.
	promotions []time.Time
	// holds are the spans staff held each sale (holds_test.go).
	holds map[string][]hold
	// staffReleases are the claims staff released, answered 200, by sale
	// (release_test.go); staffCancels the claims staff cancelled, answered
	// 200 (rings_test.go).
	staffReleases, staffCancels map[string][]op
}

// promoted records a replica's promotion.
func (h *history) promoted() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.promotions = append(h.promotions, time.Now())
}

// promotedWithin reports whether a replica was promoted since t.
func (h *history) promotedWithin(t time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.promotedBetween(t, time.Now().Add(time.Hour))
}

// promotedBetween reports whether a replica was promoted in (a, b); h.mu
// is held.
func (h *history) promotedBetween(a, b time.Time) bool {
	for _, p := range h.promotions {
		if p.After(a) && p.Before(b) {
			return true
		}
	}
	return false
}

// saleBook is one sale's account as the clients were told it.
type saleBook struct {
	supply, limit int64
	byKey         map[string]string          // user/key → claim id
	held          map[string]map[string]bool // user → claim ids granted, not released
	live          map[string]string          // claim id → user, granted not released
	confirmed     map[string]bool            // claim ids a lookup showed confirmed
	released      map[string]bool            // claim ids a release answered 200 for
	cancelled     map[string]bool            // claim ids a cancel answered 200 for → restocked
	cancelAt      map[string]time.Time       // claim id → when its cancel was answered 200
	acked         map[string]string          // every claim id answered 201/200 → user
	posUser       map[string]string          // lane/position → user
	posAt         map[string]time.Time       // lane/position → when it was first answered
	userPos       map[string]int64           // user → position
	tokenAt       map[string]time.Time       // user → first admission token
	active        map[string]bool            // default-lane users holding an admission not yet used for a claim
	finished      map[string]bool            // users whose checkout session the shop finished
	inCheckout    map[string]time.Time       // default-lane users admitted and not finished → admission time
	maxActive     int64
	maxActiveSeen int
	// claimTTL is the sale's claim_ttl_seconds: an unpaid claim older
	// than that may have expired and its unit been sold again, which no
	// client is told; grantAt is when each claim id was first answered.
	claimTTL time.Duration
	grantAt  map[string]time.Time
	// door is the sale's door as the checks know it (doorbook_test.go),
	// nil without one; cohort the cohort each JSON shopper sent.
	door   *doorBook
	cohort map[string]string
}

// unexpired counts the claim ids of set (a map keyed by claim id) that
// cannot have expired by at: answered less than the claim TTL (less a
// second for the node's instant of the grant, which is earlier) before.
func unexpired[V any](b *saleBook, set map[string]V, at time.Time) int {
	n := 0
	for id := range set {
		if b.claimTTL <= 0 || at.Sub(b.grantAt[id]) < b.claimTTL-time.Second {
			n++
		}
	}
	return n
}

// supply is the supply of sale ev the checks hold it to: the highest
// that may be in effect (a staff edit answers after it took effect).
func (h *history) supply(ev string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.sales[ev]; b != nil {
		return b.supply
	}
	return saleSupply
}

// setClaimTTL sets the claim TTL of sale ev (see saleBook.claimTTL).
func (h *history) setClaimTTL(ev string, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.sales[ev]; b != nil {
		b.claimTTL = d
	}
}

// setSupply sets the supply the checks hold sale ev to.
func (h *history) setSupply(ev string, n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.sales[ev]; b != nil {
		b.supply = n
	}
}

func newHistory() *history {
	return &history{found: make(chan violation, 1), sales: map[string]*saleBook{}, holds: map[string][]hold{}, staffReleases: map[string][]op{}, staffCancels: map[string][]op{}}
}

// open starts the account of a sale.
func (h *history) open(sale string, supply, limit, maxActive int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sales[sale] = &saleBook{supply: supply, limit: limit, maxActive: maxActive,
		byKey: map[string]string{}, held: map[string]map[string]bool{}, live: map[string]string{},
		confirmed: map[string]bool{}, released: map[string]bool{}, acked: map[string]string{},
		cancelled: map[string]bool{}, cancelAt: map[string]time.Time{},
		posUser: map[string]string{}, posAt: map[string]time.Time{}, userPos: map[string]int64{}, tokenAt: map[string]time.Time{}, active: map[string]bool{},
		finished: map[string]bool{}, inCheckout: map[string]time.Time{}, grantAt: map[string]time.Time{}, cohort: map[string]string{}}
}

func (h *history) book(sale string) *saleBook {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sales[sale]
}

// note records a fault or staff action.
func (h *history) note(kind, format string, a ...any) {
	h.record(op{Kind: kind, User: "-", Note: fmt.Sprintf(format, a...)})
}

// record appends o and checks it.
func (h *history) record(o op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o.Seq = len(h.ops)
	if o.At.IsZero() {
		o.At = time.Now()
	}
	h.ops = append(h.ops, o)
	b := h.sales[o.Sale]
	if b != nil {
		h.ops[o.Seq].Supply = b.supply
	}
	if b == nil || o.Err != "" {
		return
	}
	if o.Status >= 500 && !(o.Status == http.StatusServiceUnavailable && o.Retry && (o.Code == "degraded" || o.Code == "paused" || o.Code == "closed")) {
		h.violate(o, "a 5xx other than 503 degraded/paused/closed with Retry-After: %d %s on %s", o.Status, o.Code, o.Kind)
	}
	h.checkHold(o)
	h.checkDoor(o, b)
	if o.Cohort != "" {
		b.cohort[o.User] = o.Cohort
	}
	switch o.Kind {
	case "join":
		// A sunk join's place is a plausible one, not its own.
		if o.Status == http.StatusOK && o.Pos > 0 && o.Lane != "pass" && o.Door != "bot" && (b.door == nil || !b.door.maySink(o)) {
			h.placed(o, b)
		}
	case "finish":
		if o.Status == http.StatusOK {
			b.finished[o.User] = true
			delete(b.inCheckout, o.User)
			delete(b.active, o.User)
		}
	case "status":
		if o.Pos > 0 && o.Lane == "" && o.Note == basicNote {
			// The basic page shows the place its join form took.
			h.placed(o, b)
		}
		if o.State == "admitted" && o.Lane == "" {
			if _, ok := b.inCheckout[o.User]; !ok && !b.finished[o.User] {
				b.inCheckout[o.User] = o.At
			}
		}
		if o.State == "admitted" && o.Lane == "" {
			if _, ok := b.tokenAt[o.User]; !ok {
				b.tokenAt[o.User] = o.At
				b.active[o.User] = true
				for u := range b.active { // an admission expires unused
					if o.At.Sub(b.tokenAt[u]) > admissionTTL {
						delete(b.active, u)
					}
				}
				b.maxActiveSeen = max(b.maxActiveSeen, len(b.active))
				if b.maxActive > 0 && int64(len(b.active)) > b.maxActive+activeSlack {
					h.violate(o, "%d people hold an admission not yet used for a claim, max_active %d (+%d)", len(b.active), b.maxActive, activeSlack)
				}
			}
		}
	case "claim", "replay":
		if o.Status == http.StatusCreated || o.Status == http.StatusOK || o.Status == http.StatusGone || o.Status == http.StatusConflict {
			delete(b.active, o.User)
		}
		if o.Status != http.StatusCreated && o.Status != http.StatusOK {
			return
		}
		k := o.User + "/" + o.Key
		if first, ok := b.byKey[k]; ok && first != o.ClaimID {
			h.violate(o, "Idempotency-Key %s answered with claim %s and then %s", o.Key, first, o.ClaimID)
		}
		b.byKey[k] = o.ClaimID
		b.acked[o.ClaimID] = o.User
		if _, ok := b.cancelled[o.ClaimID]; ok || b.released[o.ClaimID] {
			return // a replay of a released or cancelled claim tells its old id
		}
		if b.held[o.User] == nil {
			b.held[o.User] = map[string]bool{}
		}
		b.held[o.User][o.ClaimID] = true
		b.live[o.ClaimID] = o.User
		if _, ok := b.grantAt[o.ClaimID]; !ok {
			b.grantAt[o.ClaimID] = o.At
		}
		if n := unexpired(b, b.held[o.User], o.At); int64(n) > b.limit {
			h.violate(o, "%s holds %d claims, limit %d", o.User, n, b.limit)
		}
		if n := unexpired(b, b.live, o.At); int64(n) > b.supply {
			h.violate(o, "%d units granted and not released, supply %d", n, b.supply)
		}
	case "lookup":
		// A claim staff cancelled (answered 200 before the lookup was
		// sent) answers cancelled: unless a promotion since may have lost
		// the cancellation until the rebuild restores it from the stream.
		if at, ok := b.cancelAt[o.ClaimID]; ok && o.Status == http.StatusOK && o.Start.After(at) && o.State != "cancelled" &&
			!h.promotedBetween(at, o.At) {
			h.violate(o, "claim %s was cancelled by staff (200 at %s) and its lookup answered %q", o.ClaimID, at.Format("15:04:05.000"), o.State)
		}
		if o.Status == http.StatusOK && o.State == "confirmed" {
			if b.released[o.ClaimID] {
				h.violate(o, "claim %s confirmed after its release was answered 200", o.ClaimID)
			}
			b.confirmed[o.ClaimID] = true
		}
	case "release":
		if o.Status == http.StatusOK {
			if b.confirmed[o.ClaimID] {
				h.violate(o, "claim %s released after it was seen confirmed", o.ClaimID)
			}
			if at, ok := b.cancelAt[o.ClaimID]; ok && o.Start.After(at) {
				h.violate(o, "claim %s released after staff cancelled it (200 at %s)", o.ClaimID, at.Format("15:04:05.000"))
			}
			b.released[o.ClaimID] = true
			delete(b.live, o.ClaimID)
			delete(b.held[o.User], o.ClaimID)
		}
	case "cancel":
		h.cancelled(o, b)
	}
}

// cancelled checks a staff cancellation of one claim (rings_test.go): a
// claim is cancelled once, never after its release was answered; a
// cancelled claim keeps its user's slot, and its unit is held no more
// when it went back to the stock. h.mu is held.
func (h *history) cancelled(o op, b *saleBook) {
	if o.Status != http.StatusOK || o.ClaimID == "" {
		return
	}
	if at, ok := b.cancelAt[o.ClaimID]; ok {
		h.violate(o, "claim %s cancelled twice: 200 at %s and again", o.ClaimID, at.Format("15:04:05.000"))
	}
	if b.released[o.ClaimID] {
		h.violate(o, "claim %s cancelled after its release was answered 200", o.ClaimID)
	}
	b.cancelled[o.ClaimID] = o.Key == "restock"
	b.cancelAt[o.ClaimID] = o.At
	if o.Key == "restock" {
		delete(b.live, o.ClaimID)
	}
}

// placed checks the position o tells its user: no one else's in the
// lane (but the documented exception), and the user's only one; h.mu is
// held.
func (h *history) placed(o op, b *saleBook) {
	// Positions count within a lane; every pass holder shares one.
	lp := fmt.Sprintf("%s/%d", o.Lane, o.Pos)
	if u, ok := b.posUser[lp]; ok && u != o.User {
		// No exception across a failover either: join.lua's fence moves a
		// promoted counter past every seq the old primary may have given
		// (package queue, "What a Redis failover does"), so a join lost
		// with it keeps its position alone.
		across := ""
		if h.promotedBetween(b.posAt[lp], o.At) {
			across = " across a failover"
		}
		h.violate(o, "position %d (lane %q) given to %s and to %s%s", o.Pos, o.Lane, u, o.User, across)
	}
	if _, ok := b.posAt[lp]; !ok {
		b.posAt[lp] = o.At
	}
	if p, ok := b.userPos[o.User]; ok && p != o.Pos {
		h.violate(o, "%s joined twice with positions %d and %d", o.User, p, o.Pos)
	}
	b.posUser[lp], b.userPos[o.User] = o.User, o.Pos
}

// refusedSince reports whether a claim of sale ev was answered 503 paused
// (the fence: rebuild first) since t.
func (h *history) refusedSince(ev string, t time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.ops) - 1; i >= 0 && h.ops[i].At.After(t); i-- {
		o := h.ops[i]
		if o.Sale == ev && o.Kind == "claim" && o.Status == http.StatusServiceUnavailable && o.Code == "paused" {
			return true
		}
	}
	return false
}

// activeSlack is the tolerance of the max_active check: the client sees
// an admission a poll after the node issued it and gives it up an answer
// after the claim, so a handful of people may overlap the edges.
const activeSlack = 3

// admissionTTL is the sale's admission_ttl_seconds.
const admissionTTL = 60 * time.Second

// violate reports v (the first only); h.mu is held.
func (h *history) violate(o op, format string, a ...any) {
	if h.stop {
		return
	}
	h.stop = true
	v := violation{What: fmt.Sprintf(format, a...), At: o.At, Ops: h.around(o)}
	h.found <- v
}

// violateNow reports a violation found by a sampler or the audit.
func (h *history) violateNow(sale, format string, a ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.violate(op{At: time.Now(), Sale: sale}, format, a...)
}

// around returns the minimal history of o: the ops of the same user or
// claim, and the faults and staff actions of the 30 s before it.
func (h *history) around(o op) []op {
	var out []op
	for _, p := range h.ops {
		near := p.At.After(o.At.Add(-30*time.Second)) && !p.At.After(o.At.Add(time.Second))
		switch {
		case p.User == "-" && near:
			out = append(out, p)
		case o.User != "" && p.User == o.User && p.Sale == o.Sale:
			out = append(out, p)
		case o.ClaimID != "" && p.ClaimID == o.ClaimID:
			out = append(out, p)
		}
	}
	if len(out) > 60 {
		out = out[len(out)-60:]
	}
	return out
}

// render prints a violation with the seed that replays it.
func (v violation) render(seed uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "VIOLATION at %s: %s\nreplay: ANTEROOM_SOAK_SEED=%d go test -tags soak -run TestSoak -v ./bench/soak\nhistory around it:\n",
		v.At.Format("15:04:05.000"), v.What, seed)
	for _, o := range v.Ops {
		b.WriteString("  " + o.String() + "\n")
	}
	// Again at the end: a CI log often shows only its tail.
	fmt.Fprintf(&b, "VIOLATION (history above): %s\n", v.What)
	return b.String()
}

// count returns how many ops of each kind were answered (any status).
func (h *history) count() (answered, total int, faults int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, o := range h.ops {
		switch o.Kind {
		case "fault":
			faults++
		case "staff":
		default:
			total++
			if o.Err == "" {
				answered++
			}
		}
	}
	return
}

// tally renders how each kind of request was answered, most frequent
// first within a kind: "claim: 201 812, 503 degraded 40, ...".
func (h *history) tally() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	counts := map[string]map[string]int{}
	for _, o := range h.ops {
		if o.User == "-" {
			continue
		}
		ans := strings.TrimSpace(fmt.Sprintf("%d %s", o.Status, o.Code))
		if o.Err != "" {
			ans = o.Err
		}
		kind := o.Kind
		switch {
		case o.Note == basicNote:
			kind = "basic page " + kind
		case o.Note == "by staff" || o.Kind == "cancel":
			kind = "staff " + kind
		}
		if counts[kind] == nil {
			counts[kind] = map[string]int{}
		}
		counts[kind][ans]++
	}
	var parts []string
	for _, kind := range []string{"join", "status", "claim", "replay", "lookup", "mine", "release", "finish", "push", "room",
		"basic page page", "basic page bjoin", "basic page status", "basic page claim", "staff release", "staff cancel"} {
		var as []string
		for a := range counts[kind] {
			as = append(as, a)
		}
		slices.SortFunc(as, func(a, b string) int { return counts[kind][b] - counts[kind][a] })
		var items []string
		for _, a := range as {
			items = append(items, fmt.Sprintf("%s %d", a, counts[kind][a]))
		}
		parts = append(parts, kind+": "+strings.Join(items, ", "))
	}
	return strings.Join(parts, "; ")
}
