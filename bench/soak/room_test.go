//go:build soak && linux

package soak

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anteroom/anteroom/internal/wait"
)

// The safety-net room the soak runs beside its sales for the whole run:
// small thresholds, so that it is full most of the time and people queue.
const (
	roomID       = "room"
	roomActive   = 8
	roomRate     = 3
	roomTTL      = 10 // admission_ttl_seconds
	roomGrace    = 3  // no_show_grace_seconds
	roomArrivals = 2  // visitors per second
)

// room plays visitors of a safety-net room: they join (admitted at once
// under the thresholds, else queued), poll while queued, stay a while
// and leave; some step away while queued and come back later (a no-show
// if their turn came meanwhile), some come back after they left. Every
// admission is checked as it arrives: the people holding an unexpired
// admission never exceed max_active, and admissions never come faster
// than the rate (issue 24, bug 7: a no-show who came back was admitted at
// once above both).
type room struct {
	c   *crowd
	h   *history
	rnd *rand.Rand

	mu     sync.Mutex
	held   map[string]span // user → their latest admission's lifetime, by the node's clock
	issued []time.Time     // every admission's issue instant, in order of arrival
	n      int
	wg     sync.WaitGroup
}

// span is an admission's lifetime (the token's iat and exp) and position.
type span struct {
	from, to time.Time
	pos      int64
}

// run creates the room and plays visitors until ctx ends.
func (r *room) run(ctx context.Context, s *system) {
	r.h.open(roomID, 0, 0, roomActive) // its answers are checked for 5xx like a sale's
	body, _ := json.Marshal(map[string]any{"name": "soak room", "mode": "safety_net", "starts_at": time.Now().UTC().Add(-time.Minute).Truncate(time.Second),
		"max_active": roomActive, "admit_rate_per_second": roomRate, "admission_ttl_seconds": roomTTL, "no_show_grace_seconds": roomGrace})
	for try := 0; ; try++ {
		status, raw := s.dp.AdminCall(s.base(try), http.MethodPut, "/admin/events/"+roomID, body)
		r.h.note("staff", "create safety-net room → %d", status)
		if status == http.StatusCreated || status == http.StatusOK {
			break
		}
		if try > 30 || ctx.Err() != nil {
			r.h.violateNow(roomID, "could not create the safety-net room: %d %s", status, raw)
			return
		}
		wait.Sleep(ctx, time.Second)
	}
	for wait.Sleep(ctx, time.Second) {
		for range roomArrivals {
			r.n++
			v := &shopper{id: fmt.Sprintf("r%d", r.n), sale: roomID, node: r.rnd.IntN(nodes), timeout: 2 * time.Second,
				rnd: rand.New(rand.NewPCG(r.rnd.Uint64(), r.rnd.Uint64()))}
			r.wg.Go(func() { r.visit(ctx, v, 0) })
		}
	}
	r.wg.Wait()
}

// visit is one visit of v: join, wait if queued, stay, leave; visits 0
// and 1 may be followed by a return.
func (r *room) visit(ctx context.Context, v *shopper, n int) {
	base := "/events/" + roomID
	var ticket, token string
	for ticket == "" && token == "" {
		a := r.c.do(ctx, v, "room", http.MethodPost, base+"/join", nil)
		if a.Status == http.StatusOK {
			ticket = a.reply.Join.Ticket
			token = a.reply.Join.AdmissionToken
		} else if !retry(ctx, v, a) {
			return
		}
	}
	stepAway := v.rnd.Float64() < 0.2
	auth := map[string]string{"Authorization": "Bearer " + ticket}
	for token == "" {
		if stepAway {
			// Another tab, a coffee: their turn may come and go meanwhile.
			stepAway = false
			if !wait.Sleep(ctx, dur(v.rnd, 3*time.Second, 20*time.Second)) {
				return
			}
		}
		a := r.c.do(ctx, v, "room", http.MethodGet, base+"/status", auth)
		switch {
		case a.Status == http.StatusOK && a.State == "admitted":
			token = a.reply.Place.AdmissionToken
		case a.Status == http.StatusOK && (a.State == "closed" || a.State == "sold_out"):
			return
		case a.Status == http.StatusUnauthorized:
			// Their ticket's turn ended while they were away: join again.
			if n < 3 {
				r.visit(ctx, v, n+1)
			}
			return
		case a.Status == http.StatusOK:
			if !wait.Sleep(ctx, pollAfter(a)) {
				return
			}
		case !retry(ctx, v, a):
			return
		}
	}
	r.admitted(v.id, token)
	// They browse for a while and leave; the admission runs out by itself.
	if !wait.Sleep(ctx, time.Duration(roomTTL)*time.Second+dur(v.rnd, 0, 10*time.Second)) {
		return
	}
	if n < 2 && v.rnd.Float64() < 0.3 {
		r.visit(ctx, v, n+1)
	}
}

// admitted checks one admission of user, whose token is token.
func (r *room) admitted(user, token string) {
	iat, exp, pos, ok := tokenSpan(token)
	if !ok {
		r.h.violateNow(roomID, "%s: an admission token without iat/exp: %.80s", user, token)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.held[user]; ok && old.from.Equal(iat) {
		return // the same admission told twice
	}
	r.held[user] = span{iat, exp, pos}
	r.issued = append(r.issued, iat)
	holding := 0
	var who []string
	positions := map[int64]bool{}
	for u, sp := range r.held {
		if !sp.from.After(iat) && sp.to.After(iat) {
			holding++
			positions[sp.pos] = true
			who = append(who, fmt.Sprintf("%s@%d %s–%s", u, sp.pos, sp.from.Format("05"), sp.to.Format("05")))
		}
	}
	slices.Sort(who)
	// No position is given twice, not across a failover either (enter.lua's
	// counter fence; docs/operate.md, "What a Redis failover does").
	if len(positions) < holding {
		r.h.violateNow(roomID, "people share a position of the safety-net room at %s: %s",
			iat.Format("15:04:05"), strings.Join(who, ", "))
	}
	// Tokens carry whole seconds: an admission issued within the same
	// second as another's end may overlap it by up to a second.
	if holding > roomActive+roomSlack {
		r.h.violateNow(roomID, "%d people hold an unexpired admission of the safety-net room at %s, max_active %d (+%d): %s",
			holding, iat.Format("15:04:05"), roomActive, roomSlack, strings.Join(who, ", "))
	}
	// The rate: at most rate × (window + 1 s of credit) + 2 admissions in
	// any 5 s window (tokens carry whole seconds).
	in := 0
	for _, t := range r.issued {
		if !t.Before(iat.Add(-5*time.Second)) && !t.After(iat) {
			in++
		}
	}
	if limit := roomRate*(5+1+1) + 2; in > limit {
		r.h.violateNow(roomID, "%d admissions to the safety-net room in the 5 s up to %s, rate %d/s (at most %d)", in, iat.Format("15:04:05"), roomRate, limit)
	}
}

// roomSlack is the tolerance of the room's max_active check: token times
// are whole seconds.
const roomSlack = 2

// tokenSpan reads an admission token's iat, exp and pos.
func tokenSpan(token string) (iat, exp time.Time, pos int64, ok bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return iat, exp, 0, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return iat, exp, 0, false
	}
	var v struct {
		IAT int64 `json:"iat"`
		EXP int64 `json:"exp"`
		Pos int64 `json:"pos"`
	}
	if json.Unmarshal(raw, &v) != nil || v.IAT == 0 || v.EXP == 0 {
		return iat, exp, 0, false
	}
	return time.Unix(v.IAT, 0), time.Unix(v.EXP, 0), v.Pos, true
}
