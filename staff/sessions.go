package staff

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// sessionsKey is the set of live console sessions.
const sessionsKey = "ar:{staff}:sessions"

// Sessions is the set of signed-in console sessions, in Redis: a session
// cookie is honoured only while its id is in the set, so a sign-out on any
// node, or EndAll, ends it on every node. Each id is scored with its
// expiry; starting a session drops the expired ones, and the whole key
// expires with its last session.
//
// A *Sessions is safe for concurrent use.
type Sessions struct {
	rdb redis.Cmdable
}

// NewSessions returns the session set kept in rdb.
func NewSessions(rdb redis.Cmdable) *Sessions { return &Sessions{rdb: rdb} }

// Start records session id, valid until expires.
func (s *Sessions) Start(ctx context.Context, id string, expires time.Time, now time.Time) error {
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRemRangeByScore(ctx, sessionsKey, "-inf", strconv.FormatInt(now.UnixMilli(), 10))
		p.ZAdd(ctx, sessionsKey, redis.Z{Score: float64(expires.UnixMilli()), Member: id})
		p.ExpireGT(ctx, sessionsKey, time.Until(expires)+time.Minute)
		p.ExpireNX(ctx, sessionsKey, time.Until(expires)+time.Minute)
		return nil
	})
	if err != nil {
		return fmt.Errorf("staff session start: %w", err)
	}
	return nil
}

// Active reports whether session id is signed in (not ended). The cookie's
// own signature and expiry are checked by the caller.
func (s *Sessions) Active(ctx context.Context, id string) (bool, error) {
	err := s.rdb.ZScore(ctx, sessionsKey, id).Err()
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("staff session check: %w", err)
	}
	return true, nil
}

// End signs session id out on every node.
func (s *Sessions) End(ctx context.Context, id string) error {
	if err := s.rdb.ZRem(ctx, sessionsKey, id).Err(); err != nil {
		return fmt.Errorf("staff session end: %w", err)
	}
	return nil
}

// EndAll signs every console session out on every node.
func (s *Sessions) EndAll(ctx context.Context) error {
	if err := s.rdb.Del(ctx, sessionsKey).Err(); err != nil {
		return fmt.Errorf("staff sessions end all: %w", err)
	}
	return nil
}
