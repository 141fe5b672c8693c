package protect

import (
	"hash/maphash"
	"strconv"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// pollTicket runs a status poll's node-local limits (status never costs a
// Redis round trip), then returns its verified ticket: the poll budget per
// IP, then per ticket, then the ticket itself (401 for none or a bad one).
//
// The per-ticket budget is counted before the ticket is verified, so a
// forged or foreign ticket polled too often is refused 429 like a good
// one. A ticket that verified before keeps its budget in its TicketCache
// entry (when Deps.Tickets is one): its poll is one lookup under one lock.
// Otherwise the budget lives in the edge's buckets, keyed by the ticket's
// hash, and moves into the cache entry once the ticket verifies.
func (s *Edge) pollTicket(c *fiber.Ctx, cfg *event.Config, now time.Time) (tokens.Ticket, error) {
	lim := &cfg.Limits // defaulted when the configuration was read
	if lim.Status.IP.On() {
		if ok, _, retry := s.status.Take("st:ip:"+cfg.ID+":"+limiterIP(s.proxies.ClientIP(c)), toLimit(lim.Status.IP), now); !ok {
			return tokens.Ticket{}, kit.RateLimited("status polls from this address", retry)
		}
	}
	raw := kit.RawTicket(c, cfg.ID)
	if raw == "" {
		return tokens.Ticket{}, kit.ErrNoToken
	}
	perTicket := toLimit(lim.Status.Ticket)
	cache, _ := s.deps.Tickets.(*TicketCache)
	if cache != nil {
		if t, found, ok, retry := cache.poll(raw, cfg.ID, perTicket, now); found {
			if !ok {
				return tokens.Ticket{}, kit.RateLimited("status polls with this ticket", retry)
			}
			return t, nil
		}
	}
	var buf [96]byte // "st:t:" + event id (≤ 64) + ":" + base 36 hash (≤ 13)
	key := append(append(append(buf[:0], "st:t:"...), cfg.ID...), ':')
	key = strconv.AppendUint(key, maphash.String(s.seed, raw), 36)
	if ok, _, retry := s.status.TakeBytes(key, perTicket, now); !ok {
		return tokens.Ticket{}, kit.RateLimited("status polls with this ticket", retry)
	}
	if cache == nil {
		return s.deps.Tickets.Verify(raw, cfg.ID)
	}
	var b limit.Bucket // full, while the budget is off
	if !perTicket.Unlimited() {
		b, _ = s.status.BucketBytes(key)
	}
	return cache.admit(raw, cfg.ID, b)
}
