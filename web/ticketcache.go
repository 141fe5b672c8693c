package web

import (
	"hash/maphash"
	"strings"
	"sync"

	"github.com/anteroom/anteroom/tokens"
)

// TicketCache remembers verified queue tickets, so that the status polls of
// one waiting person — the same ticket every few seconds — verify it once.
// A hit needs the exact ticket string that verified before, so the cache
// accepts nothing the signature check would refuse. It is bounded: a full
// shard is emptied and refilled. Safe for concurrent use.
type TicketCache struct {
	next   tickets
	seed   maphash.Seed
	shards [64]ticketShard
	limit  int
}

type ticketShard struct {
	mu sync.RWMutex
	m  map[string]tokens.Ticket
}

// NewTicketCache wraps next with a cache of about size tickets.
func NewTicketCache(next tickets, size int) *TicketCache {
	c := &TicketCache{next: next, seed: maphash.MakeSeed(), limit: max(size/64, 16)}
	for i := range c.shards {
		c.shards[i].m = make(map[string]tokens.Ticket)
	}
	return c
}

// Sign signs a ticket (not cached).
func (c *TicketCache) Sign(t tokens.Ticket) (string, error) { return c.next.Sign(t) }

// Verify returns the ticket raw carries for event, from the cache when the
// same string verified before.
func (c *TicketCache) Verify(raw, event string) (tokens.Ticket, error) {
	sh := &c.shards[maphash.String(c.seed, raw)%uint64(len(c.shards))]
	sh.mu.RLock()
	t, ok := sh.m[raw]
	sh.mu.RUnlock()
	if ok {
		if t.Event != event {
			return c.next.Verify(raw, event) // the verifier's own wrong-event answer
		}
		return t, nil
	}
	t, err := c.next.Verify(raw, event)
	if err != nil {
		return t, err
	}
	sh.mu.Lock()
	if len(sh.m) >= c.limit {
		clear(sh.m)
	}
	sh.m[strings.Clone(raw)] = t // raw may alias fiber's buffer
	sh.mu.Unlock()
	return t, nil
}
