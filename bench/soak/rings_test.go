//go:build soak && linux

package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/anteroom/anteroom/web/protect"
)

// Rings and staff cancelling (issue 36, item 6). A sale with rings
// (plan.rings) limits claims to one per payment fingerprint (and, with
// plan.deviceLimit, one per device) and records each claim's device for
// the sweep, both read from headers the shop signs for the sale, the
// user and the moment (signed_header, web/protect's SignSignal). Every
// shopper of such a sale sends both with each claim: a device of their
// own and a payment instrument per claim, unless they belong to a ring:
// a quarter of the crowd, in rings of 3–6 people sharing one payment
// fingerprint, one device, or both. A ring gets one claim per limited
// value; the others are refused 409 signal_limit, which changes nothing
// (the model accepts any refusal unchanged).
//
// Staff sweep the sale (GET /admin/events/{id}/sweep, by device or
// payment) every 6–12 s from 8 s after its start until it sells out, and
// once after it. A limited dimension must list no group (two live claims
// sharing a value); an unlimited device lists rings sharing one. Each
// round cancels one ring's claims (POST …/cancellations with the group's
// dimension and hash when the sweep lists it, else with the ring's live
// claims' ids) and one or two single claims, each with a random
// restock choice. Every cancellation is recorded per claim as an op
// "cancel" of the claim's user (Key "restock" when the unit returns), so
// the history and porcupine hold it to the model (model_test.go): a
// claim is cancelled once, never after its release, and never released
// or confirmed after; a restocked unit is held no more, a void one stays
// sold; the user keeps the slot. After the sale staff cancel a claim
// cancelled before and a released one: each must answer 409 and change
// nothing; then every cancelled claim is looked up by its user and must
// answer cancelled.
//
// The audit (auditCancels, auditSignals) reads the order stream: exactly
// one order_cancelled event per claim staff were answered 200 for, with
// the restock choice they made, none for a claim nobody asked to cancel,
// none for a released claim; granted − released − cancelled and
// restocked ≤ supply (audit); no two held claims (granted, not released,
// not cancelled) share a limited signal value. checkStaffAudit finds
// every cancellation in the audit trail.

// ringShare is the share of a rings sale's crowd that belongs to rings.
const ringShare = 0.25

// ringBook is a rings sale's rings and the secret its shop signs signals
// with.
type ringBook struct {
	secret      string
	deviceLimit bool

	mu    sync.Mutex
	rnd   *rand.Rand // draws membership; set by sales.run before the crowd arrives
	of    map[string]*ring
	open  *ring
	rings []*ring
}

// ring is a group of users sharing a payment fingerprint, a device, or
// both.
type ring struct {
	n     int
	kind  string // payment, device, both
	want  int
	users []string
}

// ringSale sets sale ev's signals and limits in cfg and its ring book in
// st. The shop secret signs the signals: the sale's own when it has a
// shop, else one set for the signals only.
func ringSale(cfg map[string]any, st *saleState, ev string) {
	secret := st.secret
	if secret == "" {
		secret = "soak-signal-secret-" + ev
		cfg["shop"] = map[string]any{"secret": secret}
	}
	cfg["buckets"] = 1 // a signal's count lives in its bucket's slot
	cfg["signals"] = map[string]any{
		"device":  map[string]any{"source": "signed_header"},
		"payment": map[string]any{"source": "signed_header"},
	}
	limits := map[string]any{"payment": 1}
	if st.plan.deviceLimit {
		limits["device"] = 1
	}
	cfg["limits"] = map[string]any{"signal_claims": limits}
	st.rings = &ringBook{secret: secret, deviceLimit: st.plan.deviceLimit, of: map[string]*ring{}}
}

// join gives shopper s the sale's signal secret and, drawn from the
// book's generator, a place in a ring.
func (rb *ringBook) join(s *shopper) {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	s.sigSecret = rb.secret
	if rb.rnd == nil || rb.rnd.Float64() >= ringShare {
		return
	}
	if rb.open == nil || len(rb.open.users) >= rb.open.want {
		rb.open = &ring{n: len(rb.rings) + 1, kind: []string{"payment", "device", "both"}[rb.rnd.IntN(3)], want: 3 + rb.rnd.IntN(4)}
		rb.rings = append(rb.rings, rb.open)
	}
	r := rb.open
	r.users = append(r.users, s.id)
	rb.of[s.id] = r
	if r.kind != "device" {
		s.payment = fmt.Sprintf("ring%d-pay", r.n)
	}
	if r.kind != "payment" {
		s.device = fmt.Sprintf("ring%d-dev", r.n)
	}
}

// ringOf returns user's ring, nil for none.
func (rb *ringBook) ringOf(user string) *ring {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.of[user]
}

// signalHeaders are the signed signal headers of s's claim under
// Idempotency-Key key (none for other requests, or outside a rings
// sale): the ring's shared values, else a device of the user's own and a
// payment instrument per claim.
func signalHeaders(s *shopper, key string) map[string]string {
	if s.sigSecret == "" || key == "" {
		return nil
	}
	device, payment := s.device, s.payment
	if device == "" {
		device = "dev-" + s.id
	}
	if payment == "" {
		payment = "pay-" + key
	}
	now := time.Now()
	return map[string]string{
		"X-Device-ID":           protect.SignSignal(s.sigSecret, now, s.sale, s.id, "device", device),
		"X-Payment-Fingerprint": protect.SignSignal(s.sigSecret, now, s.sale, s.id, "payment", payment),
	}
}

// cancelDuring has staff sweep sale ev and cancel while it sells: from
// 8 s after its start, every 6–12 s, until it sells out.
func (ss *sales) cancelDuring(ctx context.Context, ev string, rnd *rand.Rand) {
	st := ss.state(ev)
	if st == nil || st.rings == nil {
		return
	}
	if !wait.Sleep(ctx, time.Until(st.start.Add(8*time.Second))) {
		return
	}
	for ctx.Err() == nil && !ss.soldOut(ev) {
		ss.cancelRound(ctx, ev, st, rnd, "during the sale")
		if !wait.Sleep(ctx, dur(rnd, 6*time.Second, 12*time.Second)) {
			return
		}
	}
}

// cancelAfter has staff sweep and cancel once more after sale ev, cancel
// a claim cancelled before and a released one (each must answer 409 and
// change nothing), and look up every cancelled claim as its user.
func (ss *sales) cancelAfter(ev string, rnd *rand.Rand) {
	// As the audit, after the run's end too: what staff do is recorded.
	ctx := context.Background()
	st := ss.state(ev)
	if st == nil || st.rings == nil {
		return
	}
	ss.cancelRound(ctx, ev, st, rnd, "after the sale")
	h := ss.h
	h.mu.Lock()
	b := h.sales[ev]
	var cancelled, released []string
	for id := range b.cancelAt {
		cancelled = append(cancelled, id)
	}
	for id := range b.released {
		if _, ok := b.cancelled[id]; !ok {
			released = append(released, id)
		}
	}
	users := map[string]string{}
	for id, u := range b.acked {
		users[id] = u
	}
	for _, o := range h.staffCancels[ev] {
		users[o.ClaimID] = o.User
	}
	h.mu.Unlock()
	slices.Sort(cancelled)
	slices.Sort(released)
	for _, probe := range []struct {
		ids  []string
		what string
	}{{cancelled, "cancelled before"}, {released, "released"}} {
		if len(probe.ids) == 0 {
			continue
		}
		id := probe.ids[rnd.IntN(len(probe.ids))]
		// Without restock: a restock may be refused 400 while staff hold
		// the sale closed.
		ops := ss.cancel(ctx, ev, rnd.IntN(nodes), map[string]any{"claim_ids": []string{id}}, false, "again: "+probe.what,
			map[string]string{id: users[id]})
		if o := ops[0]; o.Err == "" && o.Status < 500 && (o.Status != http.StatusConflict || o.Code != "not_cancellable") {
			h.violateNow(ev, "staff cancelled claim %s (%s) and were answered %d %s, not 409 not_cancellable", id, probe.what, o.Status, o.Code)
			return
		}
	}
	// Every cancelled claim's lookup, as its user, says cancelled
	// (history.record checks it, the model too).
	h.mu.Lock()
	cancelled = cancelled[:0]
	for id := range b.cancelAt {
		cancelled = append(cancelled, id)
	}
	h.mu.Unlock()
	slices.Sort(cancelled)
	for _, id := range cancelled {
		s := &shopper{id: users[id], sale: ev, node: rnd.IntN(nodes), timeout: 5 * time.Second}
		for try := 0; try < 10; try++ {
			a := ss.c.do(ctx, s, "lookup", http.MethodGet, "/events/"+ev+"/claims/"+id, nil)
			if a.Err == "" && a.Status < 500 {
				break
			}
			if !wait.Sleep(ctx, 500*time.Millisecond) {
				return
			}
		}
	}
}

// cancelRound is one sweep and its cancellations: a ring's claims and
// one or two single claims, each with a random restock choice. The ring
// is one of the sweep's groups (cancelled by its dimension and hash) when
// the sweep lists one: a ring sharing a device that is not limited. A
// limited dimension lists no group at all (a group is two live claims or
// more sharing a value, which the limit forbids: a listed one fails the
// run), so otherwise the ring's live claims are cancelled by their ids.
// Single claims come from the sweep's groups, else from the claims the
// clients were told are live.
func (ss *sales) cancelRound(ctx context.Context, ev string, st *saleState, rnd *rand.Rand, when string) {
	dim := "payment"
	if !st.rings.deviceLimit && rnd.Float64() < 0.7 || st.rings.deviceLimit && rnd.IntN(2) == 0 {
		dim = "device" // unlimited, a ring's device holds several claims
	}
	sw, ok := ss.sweep(ctx, ev, dim)
	if !ok {
		return
	}
	limited := dim == "payment" || st.rings.deviceLimit
	var ringGroups []claim.SweepGroup
	var singles []claim.SweepClaim
	for _, g := range sw.Groups {
		if limited && g.Dim == dim {
			ss.h.violateNow(ev, "the sweep by %s lists a group of %d live claims sharing one value (%s), limit 1 a value: %v", dim, g.Size, g.Hash, g.Claims)
			return
		}
		inRing := false
		for _, c := range g.Claims {
			if st.rings.ringOf(c.User) != nil {
				inRing = true
			}
		}
		if inRing {
			ringGroups = append(ringGroups, g)
		} else {
			singles = append(singles, g.Claims...)
		}
	}
	ss.h.note("staff", "sweep %s by %s %s: %d live claims, %d groups, %d of them rings'", ev, dim, when, sw.Granted, sw.Total, len(ringGroups))
	if len(ringGroups) > 0 {
		g := ringGroups[rnd.IntN(len(ringGroups))]
		// Who may be cancelled if the answer is lost: the group's claims,
		// and the live claims of its rings' members (granted since the
		// sweep).
		maybe := map[string]string{}
		for _, c := range g.Claims {
			maybe[c.ID] = c.User
			if r := st.rings.ringOf(c.User); r != nil {
				for id, u := range ss.h.liveOf(ev, r.users) {
					maybe[id] = u
				}
			}
		}
		ss.cancel(ctx, ev, rnd.IntN(nodes), map[string]any{"group": map[string]string{"dimension": g.Dim, "hash": g.Hash}},
			rnd.IntN(2) == 0, fmt.Sprintf("group %s of %d %s", g.Dim, g.Size, when), maybe)
	} else if r := st.rings.pick(rnd); r != nil {
		if live := ss.h.liveOf(ev, r.users); len(live) > 0 {
			ss.cancel(ctx, ev, rnd.IntN(nodes), map[string]any{"claim_ids": slices.Sorted(maps.Keys(live))}, rnd.IntN(2) == 0,
				fmt.Sprintf("ring %d (%s) by its claims %s", r.n, r.kind, when), live)
		}
	}
	if len(singles) == 0 {
		for id, u := range ss.h.liveOf(ev, nil) {
			singles = append(singles, claim.SweepClaim{ID: id, User: u})
		}
		slices.SortFunc(singles, func(a, b claim.SweepClaim) int { return strings.Compare(a.ID, b.ID) })
	}
	if len(singles) > 0 {
		pick := map[string]string{}
		for range 1 + rnd.IntN(2) {
			c := singles[rnd.IntN(len(singles))]
			pick[c.ID] = c.User
		}
		ss.cancel(ctx, ev, rnd.IntN(nodes), map[string]any{"claim_ids": slices.Sorted(maps.Keys(pick))}, rnd.IntN(2) == 0,
			"single "+when, pick)
	}
}

// pick draws one of the book's rings with members, nil for none.
func (rb *ringBook) pick(rnd *rand.Rand) *ring {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	if len(rb.rings) == 0 {
		return nil
	}
	return rb.rings[rnd.IntN(len(rb.rings))]
}

// liveOf returns the claims of users (nil: everyone) in sale ev that the
// clients were told are granted and not released nor cancelled, with
// their users.
func (h *history) liveOf(ev string, users []string) map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]string{}
	b := h.sales[ev]
	if b == nil {
		return out
	}
	for id, u := range b.live {
		if _, c := b.cancelled[id]; (users == nil || slices.Contains(users, u)) && !c {
			out[id] = u
		}
	}
	return out
}

// sweep reads sale ev's sweep of dimension dim (every group, up to 50
// claims each), trying up to three nodes.
func (ss *sales) sweep(ctx context.Context, ev, dim string) (claim.Sweep, bool) {
	path := "/admin/events/" + ev + "/sweep?dimension=" + dim + "&limit=1000&max_claims=50"
	for try := 0; try < 3 && ctx.Err() == nil; try++ {
		status, raw, retry := adminSend(ctx, http.MethodGet, ss.s.base(try)+path, ss.s.dp.Admin, nil)
		if status == http.StatusOK {
			var sw claim.Sweep
			if err := json.Unmarshal(raw, &sw); err != nil {
				ss.h.violateNow(ev, "the sweep's answer does not decode (%v): %.200s", err, raw)
				return sw, false
			}
			return sw, true
		}
		ss.h.note("staff", "sweep %s by %s → %d %.200s", ev, dim, status, raw)
		if status != 0 && (status < 500 || !(status == http.StatusServiceUnavailable && retry)) {
			ss.h.violateNow(ev, "the sweep of %s by %s answered %d %.200s", ev, dim, status, raw)
			return claim.Sweep{}, false
		}
		if !wait.Sleep(ctx, time.Second) {
			break
		}
	}
	return claim.Sweep{}, false
}

// cancel sends one cancellation of sale ev (what: claim_ids or group)
// with restock to node i and records it per claim: the claims the answer
// names when it is 200, else every claim of maybe (with the answer: a
// refusal changes nothing, an ambiguous answer may have cancelled any).
// It returns the ops recorded.
func (ss *sales) cancel(ctx context.Context, ev string, i int, what map[string]any, restock bool, note string, maybe map[string]string) []op {
	body := map[string]any{"reason": "soak: " + note, "restock": restock}
	for k, v := range what {
		body[k] = v
	}
	raw, _ := json.Marshal(body)
	key := ""
	if restock {
		key = "restock"
	}
	start := time.Now()
	status, ans, retry := adminSend(ctx, http.MethodPost, ss.s.base(i)+"/admin/events/"+ev+"/cancellations", ss.s.dp.Admin, raw)
	base := op{Sale: ev, Kind: "cancel", Node: strconv.Itoa(i), Key: key, Note: note, Start: start, At: time.Now(), Status: status, Retry: retry}
	if status == 0 {
		base.Err = "unreachable" // it may have been done: recorded as ambiguous
	}
	var v struct {
		Code      string `json:"code"`
		Detail    string `json:"detail"`
		Cancelled []struct {
			ClaimID string `json:"claim_id"`
			User    string `json:"user"`
			Status  string `json:"status"`
		} `json:"cancelled"`
		Restock *bool `json:"restock"`
	}
	_ = json.Unmarshal(ans, &v)
	base.Code = v.Code
	if status == http.StatusBadRequest && !restock {
		// Only a restock may be refused 400 (the sale closed by staff
		// for a while): the soak's own requests are well formed.
		ss.h.violateNow(ev, "a cancellation (%s) answered %d %.300s", note, status, ans)
	}
	var ops []op
	if status == http.StatusOK {
		if v.Restock == nil || *v.Restock != restock {
			ss.h.violateNow(ev, "a cancellation with restock %v answered %.300s", restock, ans)
		}
		for _, c := range v.Cancelled {
			o := base
			o.ClaimID, o.User, o.State = c.ClaimID, c.User, c.Status
			ops = append(ops, o)
		}
	} else {
		for _, id := range slices.Sorted(maps.Keys(maybe)) {
			o := base
			o.ClaimID, o.User = id, maybe[id]
			ops = append(ops, o)
		}
	}
	if len(ops) == 0 {
		base.User = "-"
		ops = append(ops, base)
	}
	for _, o := range ops {
		ss.h.record(o)
		if o.Status == http.StatusOK {
			ss.h.mu.Lock()
			ss.h.staffCancels[ev] = append(ss.h.staffCancels[ev], o)
			ss.h.mu.Unlock()
		}
	}
	ss.h.note("staff", "cancel %s (%s, restock %v) at %s → %d %s: %d claims %.120s", ev, note, restock, start.Format("15:04:05.000"), status, v.Code, len(v.Cancelled), v.Detail)
	return ops
}

// adminSend sends method url with the admin token and a JSON body (nil:
// none) and returns the status (0 when no answer came), the body and
// whether Retry-After came.
func adminSend(ctx context.Context, method, url, token string, body []byte) (int, []byte, bool) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(rctx, method, url, rd)
	if err != nil {
		return 0, nil, false
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := adminClient.Do(req)
	if err != nil {
		return 0, nil, false
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, raw, resp.Header.Get("Retry-After") != ""
}

// auditCancels checks sale ev's order_cancelled events on the stream
// (cancels counts them per claim, restocked those returned to the
// stock): exactly one per claim staff were answered 200 for, with their
// restock choice; none for a claim no cancellation named; none for a
// released claim. It reports whether the sale passed.
func (ss *sales) auditCancels(ev string, grants map[string]int, released map[string]bool, cancels map[string]int, restocked map[string]bool) bool {
	h := ss.h
	h.mu.Lock()
	asked := map[string]bool{}
	for _, o := range h.ops {
		if o.Sale == ev && o.Kind == "cancel" && o.ClaimID != "" && (o.Status == http.StatusOK || o.Err != "" || o.Status >= 500) {
			asked[o.ClaimID] = true
		}
	}
	ok := slices.Clone(h.staffCancels[ev])
	h.mu.Unlock()
	for _, o := range ok {
		ss.checks.Add(1)
		switch n := cancels[o.ClaimID]; {
		case n != 1:
			h.violateNow(ev, "claim %s was cancelled by staff (200 at %s) and has %d order_cancelled events on the stream", o.ClaimID, o.At.Format("15:04:05.000"), n)
			return false
		case restocked[o.ClaimID] != (o.Key == "restock"):
			h.violateNow(ev, "claim %s was cancelled with restock %v and its order_cancelled event says %v", o.ClaimID, o.Key == "restock", restocked[o.ClaimID])
			return false
		}
	}
	for _, id := range slices.Sorted(maps.Keys(cancels)) {
		ss.checks.Add(1)
		switch {
		case cancels[id] > 1:
			h.violateNow(ev, "claim %s has %d order_cancelled events on the stream", id, cancels[id])
			return false
		case !asked[id]:
			h.violateNow(ev, "claim %s is cancelled on the stream and no cancellation answered 200 for it or went unanswered", id)
			return false
		case released[id]:
			h.violateNow(ev, "claim %s is both released and cancelled on the stream", id)
			return false
		case grants[id] == 0:
			h.violateNow(ev, "claim %s is cancelled on the stream and has no counted grant", id)
			return false
		}
	}
	return true
}

// auditSignals checks that no two claims of sale ev held at its end
// (granted, not released, not cancelled) share a value of a limited
// signal, by the keyed hashes each grant carries on the stream, nor a
// cancelled claim's value any other claim not released (a cancelled
// claim keeps counting against its signals: claim/cancel.go); and counts
// the claims refused signal_limit, for the audit's note. It reports
// whether the sale passed.
func (ss *sales) auditSignals(ev string, evs []claim.OrderEvent, released map[string]bool, cancels map[string]int) bool {
	st := ss.state(ev)
	if st == nil || st.rings == nil {
		return true
	}
	limited := map[string]bool{"payment": true, "device": st.rings.deviceLimit}
	held, withCancelled := map[string][]string{}, map[string]int{}
	seen := map[string]bool{}
	for _, e := range evs {
		if e.Type != claim.KindGranted || seen[e.ClaimID] || released[e.ClaimID] {
			continue
		}
		seen[e.ClaimID] = true
		for _, sig := range strings.Fields(e.Signals) {
			dim, _, _ := strings.Cut(sig, ":")
			if !limited[dim] {
				continue
			}
			if cancels[e.ClaimID] > 0 {
				withCancelled[sig]++
				continue
			}
			held[sig] = append(held[sig], e.ClaimID)
		}
	}
	values := 0
	for sig, ids := range held {
		ss.checks.Add(1)
		values++
		if len(ids) > 1 {
			slices.Sort(ids)
			dim, _, _ := strings.Cut(sig, ":")
			ss.h.violateNow(ev, "stream: claims %s are held and share one %s value (limit 1 a value)", strings.Join(ids, ", "), dim)
			return false
		}
	}
	// A cancelled claim keeps counting against its signals for the rest
	// of the sale (claim/cancel.go; a rebuild restores its sets), so a
	// value with a cancelled claim holds no other.
	both := 0
	for sig, n := range withCancelled {
		ss.checks.Add(1)
		if len(held[sig]) > 0 || n > 1 {
			dim, _, _ := strings.Cut(sig, ":")
			ss.h.violateNow(ev, "stream: %d cancelled and %d held claims (%s) share one %s value (limit 1 a value; a cancelled claim keeps counting)",
				n, len(held[sig]), strings.Join(held[sig], ", "), dim)
			return false
		}
		both++
	}
	h := ss.h
	h.mu.Lock()
	refused := 0
	for _, o := range h.ops {
		if o.Sale == ev && o.Code == "signal_limit" {
			refused++
		}
	}
	rings := len(st.rings.rings)
	h.mu.Unlock()
	h.note("audit", "sale %s: %d rings; %d limited signal values held, one claim each; %d claims refused signal_limit; %d values held by a cancelled claim alone",
		ev, rings, values, refused, both)
	return true
}
