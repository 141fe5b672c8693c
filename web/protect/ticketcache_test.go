package protect

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/tokens"
)

// countingTickets is a hand-written fake: one func field per method.
type countingTickets struct {
	verify func(raw, event string) (tokens.Ticket, error)
}

func (f countingTickets) Sign(tokens.Ticket) (string, error) { return "", nil }
func (f countingTickets) Verify(raw, event string) (tokens.Ticket, error) {
	return f.verify(raw, event)
}

func TestTicketCache(t *testing.T) {
	calls := 0
	c := NewTicketCache(countingTickets{verify: func(raw, event string) (tokens.Ticket, error) {
		calls++
		switch {
		case raw != "good":
			return tokens.Ticket{}, tokens.ErrInvalid
		case event != "ev":
			return tokens.Ticket{}, tokens.ErrWrongEvent
		}
		return tokens.Ticket{Event: "ev", User: "u", Seq: 3}, nil
	}}, 1024)
	for range 3 {
		if tk, err := c.Verify("good", "ev"); err != nil || tk.Seq != 3 {
			t.Fatalf("got %+v, %v", tk, err)
		}
	}
	if calls != 1 {
		t.Errorf("verified %d times, want once", calls)
	}
	if _, err := c.Verify("good", "other"); !errors.Is(err, tokens.ErrWrongEvent) {
		t.Errorf("cached ticket for another event: %v, want ErrWrongEvent", err)
	}
	for range 2 {
		if _, err := c.Verify("bad", "ev"); !errors.Is(err, tokens.ErrInvalid) {
			t.Errorf("bad ticket: %v", err)
		}
	}
	if calls != 4 {
		t.Errorf("refusals were cached: %d calls, want 4", calls)
	}
	// Bounded: many distinct tickets never grow the cache past its limit.
	many := NewTicketCache(countingTickets{verify: func(raw, event string) (tokens.Ticket, error) {
		return tokens.Ticket{Event: event}, nil
	}}, 1024)
	for i := range 50_000 {
		if _, err := many.Verify(fmt.Sprint("t", i), "ev"); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for i := range many.shards {
		total += len(many.shards[i].m)
	}
	if total > 1024 {
		t.Errorf("cache holds %d tickets, want at most 1024", total)
	}
}

// TestTicketCacheKeepsSpentPollBudgets: a ticket's poll budget lives in
// its entry, and a full cache drops refilled budgets (and tickets never
// polled) first, so a ticket that polled too often is still refused after
// thousands of other tickets went through its shard.
func TestTicketCacheKeepsSpentPollBudgets(t *testing.T) {
	c := NewTicketCache(countingTickets{verify: func(raw, event string) (tokens.Ticket, error) {
		return tokens.Ticket{Event: event, User: raw, Seq: 1}, nil
	}}, 1024)
	lim := limit.Limit{Rate: 1, Burst: 2}
	at := time.Unix(1_800_000_000, 0)
	if _, found, _, _ := c.poll("greedy", "ev", lim, at); found {
		t.Fatal("a ticket never verified was found")
	}
	if _, err := c.admit("greedy", "ev", limit.Bucket{}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, true, false} {
		tk, found, ok, retry := c.poll("greedy", "ev", lim, at)
		if !found || tk.User != "greedy" || ok != want {
			t.Fatalf("poll %d: found %v ok %v (%+v), want found, ok %v", i, found, ok, tk, want)
		}
		if !ok && retry != time.Second {
			t.Fatalf("retry %s, want 1s", retry)
		}
	}
	if _, found, _, _ := c.poll("greedy", "other", lim, at); found {
		t.Fatal("the ticket was found for another event")
	}
	for i := range 50_000 { // verified, never polled: dropped first
		if _, err := c.Verify(fmt.Sprint("t", i), "ev"); err != nil {
			t.Fatal(err)
		}
	}
	if _, found, ok, _ := c.poll("greedy", "ev", lim, at); !found || ok {
		t.Fatalf("after the cache filled: found %v ok %v, want the spent budget kept (refused)", found, ok)
	}
	if _, _, ok, _ := c.poll("greedy", "ev", lim, at.Add(time.Second)); !ok {
		t.Fatal("a second later the budget did not refill")
	}
}

// TestTicketCacheLongTickets: a ticket longer than an entry holds in itself
// is cached too, and a hit still needs the exact string.
func TestTicketCacheLongTickets(t *testing.T) {
	calls := 0
	c := NewTicketCache(countingTickets{verify: func(raw, event string) (tokens.Ticket, error) {
		calls++
		return tokens.Ticket{Event: event, User: raw[:3], Seq: 1}, nil
	}}, 1024)
	for _, n := range []int{rawInline, rawInline + 1, 3 * rawInline} {
		raw := strings.Repeat("a", n)
		other := strings.Repeat("a", n-1) + "b"
		calls = 0
		for range 3 {
			if _, err := c.Verify(raw, "ev"); err != nil {
				t.Fatal(err)
			}
		}
		if _, found, _, _ := c.poll(other, "ev", limit.Limit{}, time.Now()); found {
			t.Fatalf("%d bytes: a string differing in its last byte was found", n)
		}
		if _, found, _, _ := c.poll(raw, "ev", limit.Limit{}, time.Now()); !found || calls != 1 {
			t.Fatalf("%d bytes: found %v after %d verifications, want found after 1", n, found, calls)
		}
	}
}
