package protect

import (
	"hash/maphash"
	"strings"
	"sync"
	"time"

	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/tokens"
)

// TicketCache remembers verified queue tickets, so that the status polls of
// one waiting person — the same ticket every few seconds — verify it once.
// A hit needs the exact ticket string that verified before, so the cache
// accepts nothing the signature check would refuse. Each entry also keeps
// its ticket's status-poll budget (Edge.pollTicket), so that a poll looks
// its ticket up once, under one lock.
//
// It is bounded: a full shard drops first the entries whose poll budget
// has refilled (which changes no decision), then, if that is not enough, a
// quarter of its entries. Safe for concurrent use.
type TicketCache struct {
	next   tickets
	seed   maphash.Seed
	shards [64]ticketShard
	limit  int
}

type ticketShard struct {
	mu sync.Mutex
	// m is keyed by the ticket string's hash; an entry holds the string
	// itself, compared on every hit.
	m map[uint64]*ticketEntry
	// now is the latest poll's instant, by which eviction tells refilled
	// budgets.
	now time.Time
}

// rawInline is the longest ticket string an entry holds in itself: a hit
// then reads one object, from its first byte on, instead of the entry and
// a string somewhere else in memory (each a cache miss with thousands of
// live tickets). Tickets are about 160 to 210 bytes.
const rawInline = 232

// ticketEntry is one verified ticket: the exact string, what it carries,
// and its status-poll budget.
type ticketEntry struct {
	n    int
	raw  [rawInline]byte // the string, when n ≤ rawInline
	long string          // the string, when longer
	t    tokens.Ticket
	poll limit.Bucket
}

// newTicketEntry copies raw (which may alias fiber's buffer) into an entry.
func newTicketEntry(raw string, t tokens.Ticket, b limit.Bucket) *ticketEntry {
	e := &ticketEntry{n: len(raw), t: t, poll: b}
	if len(raw) <= rawInline {
		copy(e.raw[:], raw)
	} else {
		e.long = strings.Clone(raw)
	}
	return e
}

// is reports whether the entry is the ticket string raw.
func (e *ticketEntry) is(raw string) bool {
	if len(raw) != e.n {
		return false
	}
	if e.n <= rawInline {
		return string(e.raw[:e.n]) == raw // compared in place, not converted
	}
	return e.long == raw
}

// find returns the entry of ticket string raw, whose hash is h, or nil.
// The caller holds sh.mu.
func (sh *ticketShard) find(h uint64, raw string) *ticketEntry {
	if e := sh.m[h]; e != nil && e.is(raw) {
		return e
	}
	return nil
}

// NewTicketCache wraps next with a cache of about size tickets.
func NewTicketCache(next tickets, size int) *TicketCache {
	c := &TicketCache{next: next, seed: maphash.MakeSeed(), limit: max(size/64, 16)}
	for i := range c.shards {
		c.shards[i].m = make(map[uint64]*ticketEntry)
	}
	return c
}

// Sign signs a ticket (not cached).
func (c *TicketCache) Sign(t tokens.Ticket) (string, error) { return c.next.Sign(t) }

// Verify returns the ticket raw carries for event, from the cache when the
// same string verified before.
func (c *TicketCache) Verify(raw, event string) (tokens.Ticket, error) {
	h := maphash.String(c.seed, raw)
	sh := &c.shards[h%uint64(len(c.shards))]
	sh.mu.Lock()
	var t tokens.Ticket
	e := sh.find(h, raw)
	hit := e != nil
	if hit {
		t = e.t
	}
	sh.mu.Unlock()
	if hit {
		if t.Event != event {
			return c.next.Verify(raw, event) // the verifier's own wrong-event answer
		}
		return t, nil
	}
	t, err := c.next.Verify(raw, event)
	if err == nil {
		c.keep(h, raw, t, limit.Bucket{})
	}
	return t, err
}

// keep keeps the verified ticket t of raw, with the poll budget b, under
// raw's hash h.
func (c *TicketCache) keep(h uint64, raw string, t tokens.Ticket, b limit.Bucket) {
	sh := &c.shards[h%uint64(len(c.shards))]
	sh.mu.Lock()
	if len(sh.m) >= c.limit {
		sh.evict(c.limit)
	}
	sh.m[h] = newTicketEntry(raw, t, b)
	sh.mu.Unlock()
}

// poll is a status poll's lookup: when raw verified before for event it
// spends one token of the ticket's poll budget, shaped lim, at now, and
// returns the ticket (found) and the budget's answer (ok, retry). An
// unlimited lim spends nothing. On found == false nothing was spent: the
// caller limits and verifies the ticket itself (Edge.pollTicket).
func (c *TicketCache) poll(raw, event string, lim limit.Limit, now time.Time) (t tokens.Ticket, found, ok bool, retry time.Duration) {
	h := maphash.String(c.seed, raw)
	sh := &c.shards[h%uint64(len(c.shards))]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.find(h, raw)
	if e == nil || e.t.Event != event {
		return tokens.Ticket{}, false, false, 0
	}
	ok = true
	if !lim.Unlimited() {
		ok, _, retry = e.poll.Take(lim, now)
		if now.After(sh.now) {
			sh.now = now
		}
	}
	return e.t, true, ok, retry
}

// admit verifies raw for event, as poll's caller does on a miss, and keeps
// it with the poll budget b its caller spent for it so far. The entry
// names event itself, not the ticket's copy of it, so that poll compares
// two equal pointers: event must be long-lived (the sale's id is), never a
// request's buffer.
func (c *TicketCache) admit(raw, event string, b limit.Bucket) (tokens.Ticket, error) {
	t, err := c.next.Verify(raw, event)
	if err != nil {
		return t, err
	}
	t.Event = event // equal: the verifier checked it
	c.keep(maphash.String(c.seed, raw), raw, t, b)
	return t, nil
}

// evict makes room in a full shard: first every entry whose poll budget
// has refilled by the latest poll (lossless: the ticket verifies again on
// its next poll, with a full budget as it has now), then, if that is not
// enough, a quarter of the shard chosen by map order. The caller holds
// sh.mu.
func (sh *ticketShard) evict(bound int) {
	for h, e := range sh.m {
		if e.poll.Full(sh.now) {
			delete(sh.m, h)
		}
	}
	for h := range sh.m {
		if len(sh.m) < bound*3/4 {
			break
		}
		delete(sh.m, h)
	}
}
