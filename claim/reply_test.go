package claim

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestMalformedRepliesAreErrors swaps each script for one whose reply breaks
// its protocol — a code sent as a string, a missing field, a nil — and
// checks that the decoder answers with an error, never with a zero value
// read as "granted", "released now" or "confirmed".
func TestMalformedRepliesAreErrors(t *testing.T) {
	e := singleRedis(t)
	ctx := context.Background()
	if err := e.store.Lay(ctx, Sale{ID: "bad", Buckets: 2}, 10); err != nil {
		t.Fatal(err)
	}
	req := request{Event: "bad", User: "u", IdemKey: "k", Limit: 1, IdemTTL: DefaultIdemTTL, ClaimTTL: 60e9}
	cases := []struct {
		name, script string
		run          func(s *Store) error
	}{
		{"claim code as a string", `return {'0', 'x', 1, 'pending', ''}`, func(s *Store) error {
			_, err := s.grant(ctx, "bad", 0, []request{req})
			return err
		}},
		{"claim units left missing", `return {0, 'x', false, 'pending', ''}`, func(s *Store) error {
			_, err := s.grant(ctx, "bad", 0, []request{req})
			return err
		}},
		{"claim granted without an id", `return {0, '', 1, 'pending', ''}`, func(s *Store) error {
			_, err := s.grant(ctx, "bad", 0, []request{req})
			return err
		}},
		{"release code nil", `return {false, 'released', ''}`, func(s *Store) error {
			_, err := s.release(ctx, "bad", 0, "user", e.svc.now(), []string{"0-x"}, []string{"u"})
			return err
		}},
		{"confirm code nil", `return {false, 'confirmed'}`, func(s *Store) error {
			_, err := s.Confirm(ctx, "bad", "0-0123456789abcdef01234567")
			return err
		}},
		{"confirm status missing", `return {0}`, func(s *Store) error {
			_, err := s.Confirm(ctx, "bad", "0-0123456789abcdef01234567")
			return err
		}},
		{"donate code as a string", `return {'0', 3, 'g'}`, func(s *Store) error {
			_, err := s.transferOut(ctx, "bad", 0, 1, 4)
			return err
		}},
		{"donate nothing moved", `return {0, 0, 'g'}`, func(s *Store) error {
			_, err := s.transferOut(ctx, "bad", 0, 1, 4)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewStore(e.rdb)
			bad := redis.NewScript(c.script)
			s.lua.claim, s.lua.release, s.lua.confirm, s.lua.donate = bad, bad, bad, bad
			if err := c.run(s); err == nil || errors.Is(err, ErrNotFound) {
				t.Errorf("reply %s: err %v, want a malformed-reply error", c.script, err)
			}
		})
	}
}
