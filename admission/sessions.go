package admission

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/anteroom/anteroom/queue"
)

//go:embed finish.lua
var finishLua string

//go:embed sessions.lua
var sessionsLua string

// ErrUnknownSession is returned by Finish for a jti no node issued for the
// event (or whose token expired more than SessionGrace ago).
var ErrUnknownSession = errors.New("admission: unknown checkout session")

// SessionGrace is how long after its admission token expires a session's
// jti is still known, so a shop that reports a checkout finished late is
// answered, not refused.
const SessionGrace = 10 * time.Minute

// Session records that an admission token with id jti was issued for
// position pos of event ev, so that the shop can report the checkout
// session finished by that jti (Frontier.Finish). The next refresh writes
// the mapping to Redis, for as long as the token lasts plus SessionGrace.
// Only the default lane's positions are kept: max_active caps the default
// lane alone, and a lane member's or a bypass pass's position (see
// queue.Laned, PassPosition) has no place in its bitmaps, so finishing such
// a token is an unknown session. Safe for concurrent use; no Redis.
func (s *Snapshots) Session(ev, jti string, pos int64) {
	if lane, _ := queue.Unlane(pos); lane != 0 {
		return
	}
	s.putBackSessions(ev, map[string]int64{jti: pos})
}

func (s *Snapshots) putBackSessions(ev string, m map[string]int64) {
	if len(m) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions == nil {
		s.sessions = map[string]map[string]int64{}
	}
	cur := s.sessions[ev]
	if cur == nil {
		cur = map[string]int64{}
		s.sessions[strings.Clone(ev)] = cur
	}
	for jti, pos := range m {
		cur[strings.Clone(jti)] = pos
	}
}

func (s *Snapshots) takeSessions(ev string) map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.sessions[ev]
	delete(s.sessions, ev)
	return m
}

// recordSessions writes jti -> position for event ev in one script call
// (every key carries the event's hash tag: one slot on a cluster).
func (f *Frontier) recordSessions(ctx context.Context, ev string, m map[string]int64, ttl time.Duration) error {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	args := make([]any, 0, len(m)+1)
	args = append(args, (ttl + SessionGrace).Milliseconds())
	for jti, pos := range m {
		keys = append(keys, sessionKey(ev, jti))
		args = append(args, pos)
	}
	if err := f.sessions.Run(ctx, f.rdb, keys, args...).Err(); err != nil {
		return fmt.Errorf("sessions %s: %w", ev, err)
	}
	return nil
}

// Finished is the answer to a finished checkout session.
type Finished struct {
	// Position is the session's queue position.
	Position int64
	// Replay is true when the session had already been reported finished.
	Replay bool
}

// Finish ends the checkout session of event ev whose admission token has
// id jti: the position stops counting against max_active (the next
// advance may admit someone else, never above the rate), and a later
// token for it does not make it active again. Idempotent. It returns
// ErrUnknownSession for a jti not issued for ev (or long expired).
func (f *Frontier) Finish(ctx context.Context, ev, jti string) (Finished, error) {
	keys := []string{sessionKey(ev, jti), finishedKey(ev), activeKey(ev)}
	res, err := f.finish.Run(ctx, f.rdb, keys).Int64Slice()
	if err != nil {
		return Finished{}, fmt.Errorf("finish %s: %w", ev, err)
	}
	if len(res) != 3 {
		return Finished{}, fmt.Errorf("finish %s: unexpected reply %v", ev, res)
	}
	if res[0] == 0 {
		return Finished{}, ErrUnknownSession
	}
	return Finished{Position: res[1], Replay: res[2] == 1}, nil
}
