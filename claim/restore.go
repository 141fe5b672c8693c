package claim

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/anteroom/anteroom/event"
)

// DefaultIdemTTL is how long an idempotency key is remembered when the
// request does not say.
const DefaultIdemTTL = 24 * time.Hour

// restorePlan is what a rebuild writes into each bucket.
type restorePlan struct {
	gen                          string
	mark                         uint64 // the rebuild's epoch marker
	superseded                   int    // grants void by the fence
	stock, grantedB, releasedB   []int64
	cancelledB, restockedB       []int64
	claims                       [][]restoreClaim // per bucket
	granted, released, confirmed int
	cancelled, restocked         int
	available, oversold          int64
}

type restoreClaim struct {
	id, user, idem string
	raw            []byte // the record as claim.lua writes it
	deadline       int64  // ms
	idemTTL        int64  // s
	// sig are the signal sets a held claim counts in (none for a
	// released one), expiring at sigUntil (ms, 0: none set).
	sig      []string
	sigUntil int64
}

// storedRecord is a claim record as the scripts keep it.
type storedRecord struct {
	User   string `json:"user"`
	Pos    int64  `json:"pos"`
	AtMs   int64  `json:"at"`
	Status Status `json:"status"`
	Idem   string `json:"idem,omitempty"`
	// Sig are the signal sets the claim counts in (their keys), which a
	// release leaves (release.lua).
	Sig []string `json:"sig,omitempty"`
	// CancelReason and Restock are a cancelled claim's, as cancel.lua
	// writes them.
	CancelReason string `json:"cancel_reason,omitempty"`
	Restock      bool   `json:"restock,omitempty"`
}

// planRestore derives every bucket's state from the order events evs
// (duplicates allowed) and the order worker's statuses: each distinct
// granted claim is restored in the bucket its id names (the user's home
// bucket), cancelled if an order_cancelled event exists (staff's decision
// wins: a cancellation acts on a pending or confirmed claim only), else
// confirmed if the worker confirmed it (even when a released event
// exists: the confirmation wins), else released if a released event
// exists, else pending with its expiry deadline; the units not held by
// live claims (a released claim, a cancelled one restocked) are spread
// evenly over the buckets.
//
// markers are the event's epoch markers (the rebuild's own last, at
// sequence mark): a granted event read from the stream counts only if no
// marker lies between its epoch and its sequence (see ended); events not
// read from the stream (Seq 0) are the rebuild's own republishes and count.
func planRestore(cfg *event.Config, evs []OrderEvent, statuses map[string]Status, markers []uint64, now time.Time) *restorePlan {
	n := cfg.Buckets
	p := &restorePlan{
		gen:   strconv.FormatInt(now.UnixNano(), 10),
		stock: make([]int64, n), grantedB: make([]int64, n), releasedB: make([]int64, n),
		cancelledB: make([]int64, n), restockedB: make([]int64, n),
		claims: make([][]restoreClaim, n),
	}
	if len(markers) > 0 {
		p.mark = markers[len(markers)-1]
	}
	granted := map[string]OrderEvent{}
	released := map[string]bool{}
	cancelled := map[string]OrderEvent{}
	void := map[string]bool{}
	for _, e := range evs {
		switch e.Type {
		case KindGranted:
			if e.Seq != 0 && ended(firstAfterIn(markers, e.Epoch), e.Seq) {
				void[e.ClaimID] = true
				continue
			}
			if _, ok := granted[e.ClaimID]; !ok {
				granted[e.ClaimID] = e
			}
		case KindReleased:
			released[e.ClaimID] = true
		case KindCancelled:
			if _, ok := cancelled[e.ClaimID]; !ok {
				cancelled[e.ClaimID] = e
			}
		}
	}
	for id := range void {
		if _, ok := granted[id]; !ok {
			p.superseded++
		}
	}
	ttl := time.Duration(cfg.ClaimTTLSeconds) * time.Second
	for id, g := range granted {
		p.granted++
		rec := storedRecord{User: g.User, Pos: g.Pos, AtMs: g.At.UnixMilli(), Status: StatusPending, Idem: g.Idem}
		ce, isCancelled := cancelled[id]
		switch {
		case isCancelled:
			// One event per cancellation (cancel.lua writes it once);
			// a duplicate on the stream carries the same choice.
			rec.Status, rec.CancelReason, rec.Restock = StatusCancelled, string(ce.Reason), ce.Restock
			p.cancelled++
			if ce.Restock {
				p.restocked++
			}
		case statuses[id] == StatusConfirmed:
			// Trusted over a released event: Redis confirmed the claim,
			// so a release was decided on a copy that lost the
			// confirmation, and its unit stays sold.
			rec.Status = StatusConfirmed
			p.confirmed++
		case released[id]:
			rec.Status = StatusReleased
			p.released++
		}
		b, err := ParseClaimID(id)
		if err != nil || b >= n {
			continue // counted as sold; no bucket can hold its state
		}
		p.grantedB[b]++
		switch {
		case rec.Status == StatusReleased:
			p.releasedB[b]++
		case rec.Status == StatusCancelled:
			p.cancelledB[b]++
			if rec.Restock {
				p.restockedB[b]++
			}
		}
		var sig []string
		var sigUntil int64
		if rec.Status != StatusReleased {
			sig = signalKeys(bucketOf(cfg.ID, b), g.Signals)
			if len(sig) > 0 && !g.SignalsUntil.IsZero() {
				sigUntil = max(g.SignalsUntil.UnixMilli(), 1)
			}
			rec.Sig = sig
		}
		raw, _ := json.Marshal(rec) // a plain struct: cannot fail
		c := restoreClaim{id: id, user: g.User, idem: g.Idem, raw: raw, deadline: g.At.Add(ttl).UnixMilli(), sig: sig, sigUntil: sigUntil}
		if g.Idem != "" {
			c.idemTTL = int64((DefaultIdemTTL - now.Sub(g.At)) / time.Second)
		}
		p.claims[b] = append(p.claims[b], c)
	}
	p.available = cfg.OnSale() - int64(p.granted) + int64(p.released) + int64(p.restocked)
	if p.available < 0 {
		p.oversold, p.available = -p.available, 0
	}
	for b := range n {
		p.stock[b] = p.available / int64(n)
		if int64(b) < p.available%int64(n) {
			p.stock[b]++
		}
	}
	return p
}

// restoreChunk is how many claims one restore_claims.lua call writes.
const restoreChunk = 200

// restoreEvent writes plan into every bucket of ev, each frozen by token.
func (s *Store) restoreEvent(ctx context.Context, ev string, p *restorePlan, token string) error {
	for b := range p.stock {
		k := bucketOf(ev, b)
		keys := append(k.stockKeys(4), k.transfers(), k.applied(), k.parked(), k.gen())
		ok, err := s.lua.restore.Run(ctx, s.rdb, keys, p.stock[b], p.grantedB[b], p.releasedB[b], p.gen, token, p.mark,
			p.cancelledB[b], p.restockedB[b]).Int()
		if err == nil && ok == 0 {
			err = fmt.Errorf("bucket is no longer frozen by this rebuild")
		}
		if err != nil {
			return fmt.Errorf("restore %s/%d: %w", ev, b, err)
		}
		claims := p.claims[b]
		for len(claims) > 0 {
			chunk := claims[:min(restoreChunk, len(claims))]
			claims = claims[len(chunk):]
			keys := []string{k.records(), k.expiry(), k.frozen()}
			args := []any{token}
			for _, c := range chunk {
				keys = append(keys, k.userClaims(c.user), k.userHistory(c.user), k.idem(c.user, c.idem))
				keys = append(keys, c.sig...)
				args = append(args, c.id, c.raw, c.deadline, max(c.idemTTL, 0), len(c.sig), c.sigUntil)
			}
			ok, err := s.lua.restoreClaims.Run(ctx, s.rdb, keys, args...).Int()
			if err == nil && ok == 0 {
				err = fmt.Errorf("bucket is no longer frozen by this rebuild")
			}
			if err != nil {
				return fmt.Errorf("restore claims %s/%d: %w", ev, b, err)
			}
		}
	}
	return nil
}

// signalKeys are the keys in bucket k of the signal sets a granted
// event's signals ("<dim>:<hash>" separated by spaces) name; a malformed
// or repeated one is left out (it could not have been counted).
func signalKeys(k bucketKeys, signals string) []string {
	var out []string
	var sigs []Signal
	for _, f := range strings.Fields(signals) {
		// The hash is hex: the last colon ends the dimension, which may
		// hold one of its own (token:<claim>).
		i := strings.LastIndexByte(f, ':')
		if i < 0 {
			continue
		}
		dim, hash := f[:i], f[i+1:]
		sg := Signal{Dim: dim, Hash: hash, Max: 1}
		if checkSignals(append(sigs, sg)) != nil {
			continue
		}
		sigs = append(sigs, sg)
		out = append(out, k.signal(dim, hash))
	}
	return out
}
