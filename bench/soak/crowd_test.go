//go:build soak && linux

package soak

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	anteroomcrowd "github.com/anteroom/anteroom/internal/crowd"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/anteroom/anteroom/tokens"
	webshopper "github.com/anteroom/anteroom/web/shopper"
)

// crowd plays shoppers against the current sale: joins, polls, claims
// with retries under the same Idempotency-Key (and, for some, a twin sent
// at once to another node), replays of answered claims, releases, lookups,
// and abandoners who join and never come back or are admitted and never
// claim. Every exchange goes to the history, read by client/'s decoders
// (internal/crowd.Exchange).
type crowd struct {
	h       *history
	urls    []string
	client  *http.Client
	invites *tokens.Invites // signs lane invites with the deployment's ticket secret
	pushes  *pushes         // the Web Push subscriptions the crowd made
	tickets *tokens.Tickets // signs the blocked shoppers' tickets (door_test.go)
	wg      sync.WaitGroup
	n       int
	// blocked, bots and members number the door's shoppers' ids.
	blocked, bots, members int
}

func newCrowd(h *history, urls []string, invites *tokens.Invites, tickets *tokens.Tickets) *crowd {
	return &crowd{h: h, urls: urls, invites: invites, tickets: tickets, client: &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
		MaxIdleConnsPerHost: 64, IdleConnTimeout: 10 * time.Second,
	}}}
}

// shopper is one person's plan, drawn from the seeded generator.
type shopper struct {
	id      string
	sale    string
	node    int
	abandon int // 0 buys; 1 leaves after joining; 2 leaves once admitted
	keys    int
	twin    bool
	replay  bool
	release bool
	timeout time.Duration
	think   time.Duration
	rnd     *rand.Rand
	// lane is the shopper's lane ("" default; "pass" joins with the sale's
	// bypass pass); invite and pass are the headers that put them there.
	lane   string
	invite string
	pass   string
	// secret, when set, is the sale's shop secret: the shop finishes the
	// shopper's checkout session when they are done.
	secret string
	// basic shoppers use the basic page (no JavaScript) and its forms
	// (basicpage_test.go); push ones subscribe to Web Push once they
	// joined (push_test.go).
	basic, push bool
	// door is the shopper's standing at the sale's door (door_test.go):
	// "" (none), "blocked", "bot", "offlist" or "member"; fp marks an id
	// off the eligibility list its filter takes for a member. cohort is
	// the header a JSON shopper sends (a rule may sink it); linger is how
	// long an admitted shopper waits before claiming, patience how long
	// a bot polls.
	door, cohort     string
	fp               bool
	linger, patience time.Duration
	// sigSecret, in a sale with rings (rings_test.go), signs the
	// shopper's signal headers; device and payment are their ring's
	// shared values ("": their own).
	sigSecret, device, payment string
}

// arrive starts n shoppers on sale with plans drawn from rnd; st (nil for
// the core path) sends some to the sale's early lane and some with its
// bypass pass.
func (c *crowd) arrive(ctx context.Context, sale string, n int, st *saleState, rnd *rand.Rand) {
	for range n {
		c.n++
		s := &shopper{id: fmt.Sprintf("u%d", c.n), sale: sale, node: rnd.IntN(len(c.urls)), keys: 1 + rnd.IntN(3),
			twin: rnd.Float64() < 0.1, replay: rnd.Float64() < 0.2, release: rnd.Float64() < 0.15,
			timeout: []time.Duration{2 * time.Second, 5 * time.Second}[rnd.IntN(2)],
			think:   time.Duration(rnd.Int64N(int64(2 * time.Second))),
			rnd:     rand.New(rand.NewPCG(rnd.Uint64(), rnd.Uint64()))}
		switch r := rnd.Float64(); {
		case r < 0.08:
			s.abandon = 1
		case r < 0.13:
			s.abandon = 2
		}
		c.standAtDoor(s, st, rnd)
		if st != nil && st.rings != nil {
			st.rings.join(s)
		}
		if s.door == "blocked" || s.door == "bot" || s.door == "offlist" {
			s.abandon = 0
			c.wg.Go(func() { c.play(ctx, s) })
			continue
		}
		if st != nil {
			s.secret = st.secret
			switch r := rnd.Float64(); {
			case st.pass != "" && st.passes < st.plan.passUses && r < st.plan.passFrac():
				st.passes++
				s.lane, s.pass, s.abandon = "pass", st.pass, 0
			case st.plan.lane && r < st.plan.passFrac()+st.plan.laneFrac():
				st.invites++
				s.lane = laneName
				s.invite = c.invites.SignLane(sale, s.id, laneName, time.Now().Add(time.Hour))
			}
		}
		switch r := rnd.Float64(); {
		case s.lane == "" && r < 0.08:
			s.basic, s.cohort, s.linger = true, "", 0
		case s.lane == "" && s.abandon == 0 && r < 0.18 && c.pushes != nil:
			s.push = true
		}
		if s.basic {
			c.wg.Go(func() { c.playBasic(ctx, s) })
			continue
		}
		c.wg.Go(func() { c.play(ctx, s) })
	}
}

// wait returns when every shopper is done.
func (c *crowd) wait() { c.wg.Wait() }

// answer is a decoded response.
type answer struct {
	op
	reply anteroomcrowd.Answer // the exchange as client/'s decoders read it
}

// pollAfter is the soak's pause before a shopper's next status poll: the
// node's poll_after_ms, but at least 100 ms and at most 1 s. The soak's
// shoppers are impatient on purpose, as its retries are (retry): the node
// must keep its promises to clients that poll and retry sooner than it
// asks, not only to ones that follow client/'s pace.
func pollAfter(a answer) time.Duration {
	return min(max(a.reply.Place.PollAfter, 100*time.Millisecond), time.Second)
}

func (c *crowd) do(ctx context.Context, s *shopper, kind, method, path string, hdr map[string]string) answer {
	url := c.urls[s.node%len(c.urls)]
	a := answer{op: op{Sale: s.sale, User: s.id, Kind: kind, Node: strconv.Itoa(s.node % len(c.urls)), Key: hdr["Idempotency-Key"], Lane: s.lane,
		Door: s.door, Cohort: s.cohort}}
	if s.fp {
		a.Note = falsePositiveNote
	}
	if kind == "release" || kind == "lookup" {
		// The claim asked about, kept when no answer names it (a timeout,
		// a 503): the model needs to know what may have been released.
		a.ClaimID = claimOfPath(path)
	}
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	a.Start = time.Now()
	ans := anteroomcrowd.Exchange(rctx, c.client, method, url+path, map[string]string{"X-User-ID": s.id}, doorHeaders(s), signalHeaders(s, hdr["Idempotency-Key"]), hdr)
	switch {
	case ans.Err != nil && ans.Cut: // answered, but the body was cut
		a.Err = shortErr(ans.Err)
		c.h.record(a.op)
		return a
	case ans.Err != nil:
		if ctx.Err() != nil {
			return a // the run is over: not an answer, not recorded
		}
		a.Err = shortErr(ans.Err)
		s.node++ // try another node next time
		c.h.record(a.op)
		return a
	}
	a.Status = ans.Status
	a.Retry = ans.HasRetryAfter
	a.reply = ans
	a.Code = ans.Code
	a.State = ans.State()
	if id := ans.Claim.ID; id != "" || a.ClaimID == "" {
		a.ClaimID = id
	}
	if kind == "join" {
		a.Pos = ans.Join.Position
	}
	a.Token = ans.Join.AdmissionToken != "" || ans.Place.AdmissionToken != ""
	c.h.record(a.op)
	return a
}

// claimOfPath is the claim id of a path "…/claims/{id}[/release]".
func claimOfPath(path string) string {
	_, rest, ok := strings.Cut(path, "/claims/")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "/")
	return id
}

func shortErr(err error) string {
	var ne net.Error
	if ok := asNetErr(err, &ne); ok && ne.Timeout() {
		return "timeout"
	}
	return "unreachable"
}

// retry reports whether a asks for another try, after waiting.
func retry(ctx context.Context, s *shopper, a answer) bool {
	if a.Err == "" && a.Status != http.StatusTooManyRequests && a.Status < 500 {
		return false
	}
	return wait.Sleep(ctx, 200*time.Millisecond+time.Duration(s.rnd.Int64N(int64(600*time.Millisecond))))
}

// play runs one shopper to a final answer or the end of the run.
func (c *crowd) play(ctx context.Context, s *shopper) {
	base := "/events/" + s.sale
	var ticket, token string
	var joinHdr map[string]string
	switch {
	case s.pass != "":
		joinHdr = map[string]string{"X-Bypass-Pass": s.pass}
	case s.invite != "":
		joinHdr = map[string]string{tokens.InviteHeader: s.invite}
	}
	for ticket == "" && token == "" {
		a := c.do(ctx, s, "join", http.MethodPost, base+"/join", joinHdr)
		switch {
		case a.Status == http.StatusOK && s.pass != "":
			token = a.reply.Join.AdmissionToken
		case a.Status == http.StatusOK:
			ticket = a.reply.Join.Ticket
			if s.push {
				c.subscribe(ctx, s, ticket)
			}
			if lane := a.reply.Join.Lane; lane != strings.TrimPrefix(s.lane, "pass") {
				c.h.violateNow(s.sale, "%s joined with an invite for lane %q and was put in lane %q", s.id, s.lane, lane)
			}
		case s.pass != "" && a.Status == http.StatusForbidden:
			return // the pass is used up (or revoked): a final answer
		case s.door == "blocked" && a.Status == http.StatusForbidden:
			c.pollBlocked(ctx, s)
			return
		case !retry(ctx, s, a):
			return
		}
	}
	if s.abandon == 1 {
		return
	}
	auth := map[string]string{"Authorization": "Bearer " + ticket}
	// 6 % of the default lane step away once while they wait, longer than
	// the no-show grace: their turn may pass, and with max_active they
	// are held as late no-shows until the frontier lets them in.
	stepAway := s.lane == "" && s.rnd.Float64() < 0.06
	if s.patience > 0 { // a bot polls for a while, then leaves
		pctx, cancel := context.WithTimeout(ctx, s.patience)
		defer cancel()
		ctx = pctx
	}
	for token == "" {
		a := c.do(ctx, s, "status", http.MethodGet, base+"/status", auth)
		if stepAway && a.Status == http.StatusOK && a.State == "waiting" {
			stepAway = false
			if !wait.Sleep(ctx, dur(s.rnd, 6*time.Second, 15*time.Second)) {
				return
			}
			continue
		}
		switch {
		case a.Status == http.StatusOK && a.State == "admitted":
			token = a.reply.Place.AdmissionToken
		case a.Status == http.StatusOK && a.State == "closed" && a.reply.Place.ClosedByStaff:
			// Staff closed the room for a while: ask again later.
			if !wait.Sleep(ctx, pollAfter(a)) {
				return
			}
		case a.Status == http.StatusOK && (a.State == "sold_out" || a.State == "closed" || a.State == "not_selected"):
			return
		case a.Status == http.StatusOK:
			if !wait.Sleep(ctx, pollAfter(a)) {
				return
			}
		case !retry(ctx, s, a):
			return
		}
	}
	if s.abandon == 2 {
		return
	}
	if s.linger > 0 && !wait.Sleep(ctx, s.linger) { // reading the page first
		return
	}
	defer c.finish(ctx, s, token)
	var granted []string
	for k := range s.keys {
		if k > 0 && !wait.Sleep(ctx, s.think) {
			return
		}
		key := fmt.Sprintf("%s-k%d", s.id, k)
		hdr := map[string]string{"Authorization": "Bearer " + token, "Idempotency-Key": key}
		copies := 1
		if k == 0 && s.twin {
			copies = 2
		}
		finals := make([]answer, copies)
		var wg sync.WaitGroup
		for j := range copies {
			twin := *s
			twin.node += j
			twin.rnd = rand.New(rand.NewPCG(uint64(j), s.rnd.Uint64()))
			wg.Go(func() { finals[j] = c.claim(ctx, &twin, base, hdr) })
		}
		wg.Wait()
		a := finals[0]
		if a.Status != http.StatusCreated && a.Status != http.StatusOK {
			return // sold out, limit, or the run ended
		}
		granted = append(granted, a.ClaimID)
		if s.replay {
			c.do(ctx, s, "replay", http.MethodPost, base+"/claim", hdr)
		}
	}
	for _, id := range granted {
		c.do(ctx, s, "lookup", http.MethodGet, base+"/claims/"+id, nil)
	}
	if len(granted) > 0 {
		c.do(ctx, s, "mine", http.MethodGet, base+"/claims", nil)
	}
	if s.release && len(granted) > 0 {
		id := granted[s.rnd.IntN(len(granted))]
		for {
			a := c.do(ctx, s, "release", http.MethodPost, base+"/claims/"+id+"/release", nil)
			a.Kind = "release"
			if !retry(ctx, s, a) {
				break
			}
		}
		c.do(ctx, s, "lookup", http.MethodGet, base+"/claims/"+id, nil)
	}
}

// finish has the shop end the shopper's checkout session, signed with the
// sale's shop secret, as a shop does once the shopper paid or left: only
// for sales with a shop, and for default-lane shoppers (a lane member's or
// a pass holder's admission is no checkout session: 404 unknown_session).
func (c *crowd) finish(ctx context.Context, s *shopper, token string) {
	if s.secret == "" || token == "" {
		return
	}
	jti := tokenJTI(token)
	path := "/events/" + s.sale + "/sessions/" + jti + "/finished"
	for try := 0; try < 30; try++ {
		hdr := map[string]string{"X-Anteroom-Signature": webshopper.SignShopCall(s.secret, time.Now(), path, nil)}
		a := c.do(ctx, s, "finish", http.MethodPost, path, hdr)
		if a.Status == http.StatusNotFound && s.lane == "" && try < 29 {
			// A session is known about a tick after its token was issued.
			if !wait.Sleep(ctx, 300*time.Millisecond) {
				return
			}
			continue
		}
		if !retry(ctx, s, a) {
			return
		}
	}
}

// tokenJTI reads the jti of a JWT's payload (the shop's gateway verified
// the token; the soak only needs the id).
func tokenJTI(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var v struct {
		JTI string `json:"jti"`
	}
	_ = json.Unmarshal(raw, &v)
	return v.JTI
}

// claim sends one claim until it has a final answer.
func (c *crowd) claim(ctx context.Context, s *shopper, base string, hdr map[string]string) answer {
	for {
		a := c.do(ctx, s, "claim", http.MethodPost, base+"/claim", hdr)
		if !retry(ctx, s, a) {
			return a
		}
	}
}

func asNetErr(err error, ne *net.Error) bool { return errors.As(err, ne) }
