package sale

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

// Present records that the holder of position pos in event ev was issued
// an admission token; the next refresh marks the position present (so it is
// not counted as a no-show) and active until the token expires. Safe for
// concurrent use; cheap (no Redis).
func (s *Snapshots) Present(ev string, pos int64) { s.PresentAfter(ev, pos, -1) }

// PresentAfter is Present for a holder who waited waited from joining to
// this admission token (negative: unknown). The refresh that first marks
// the position present adds the wait to the event's report tally (see
// admission.Tally), once per position.
func (s *Snapshots) PresentAfter(ev string, pos int64, waited time.Duration) {
	s.mark(&s.present, ev, pos, waitSeconds(waited))
}

// Activate counts position pos of event ev active under max_active until
// until in Redis at once (admission.Frontier.Activate): the one Redis call
// of this file, made once per admission token minted in a sale with
// max_active, before the token is handed out, so that a node killed before
// its next refresh leaves no valid token uncounted. The presence mark
// (Present) is still needed: it is what keeps the position from being a
// no-show.
func (s *Snapshots) Activate(ctx context.Context, ev string, pos int64, until time.Time) error {
	return s.frontier.Activate(ctx, ev, pos, until)
}

// Claimed records that the holder of position pos in event ev was granted a
// claim: the next refresh ends the admission's hold on max_active (a pending
// claim holds it while it is pending). Safe for concurrent use; no Redis.
func (s *Snapshots) Claimed(ev string, pos int64) { s.ClaimedAfter(ev, pos, -1) }

// ClaimedAfter is Claimed for a holder who claimed waited after their
// admission token was issued (negative: unknown); the position's first
// grant adds it to the report tally, once per position.
func (s *Snapshots) ClaimedAfter(ev string, pos int64, waited time.Duration) {
	s.mark(&s.claimed, ev, pos, waitSeconds(waited))
}

// Session records that an admission token with id jti was issued for
// position pos of event ev, so that the shop can report the checkout
// session finished by that jti (admission.Frontier.Finish). The next
// refresh writes the mapping to Redis, for as long as the token lasts plus
// admission.SessionGrace. Only the default lane's positions are kept:
// max_active caps the default lane alone, and a lane member's or a bypass
// pass's position (see queue.Laned, admission.PassPosition) has no place in
// its bitmaps, so finishing such a token is an unknown session. Safe for
// concurrent use; no Redis.
func (s *Snapshots) Session(ev, jti string, pos int64) {
	if lane, _ := queue.Unlane(pos); lane != 0 {
		return
	}
	s.putBackSessions(ev, map[string]int64{jti: pos})
}

// laneMarks keys the presence and claim marks of lane of event ev.
func laneMarks(ev string, lane int) string { return ev + "/" + strconv.Itoa(lane) }

// mark keeps pos, a position of the default lane or one made by
// queue.Laned, and its holder's wait for the next refresh of its lane. A
// position of no lane (admission.PassPosition) is no frontier's business
// and is dropped.
func (s *Snapshots) mark(marks *map[string]map[int64]int64, ev string, pos, wait int64) {
	lane, n := queue.Unlane(pos)
	switch {
	case lane == 0:
		s.putBack(marks, ev, []int64{pos}, []int64{wait})
	case lane <= event.MaxLanes:
		s.putBack(marks, laneMarks(ev, lane), []int64{n}, []int64{wait})
	}
}

// waitSeconds is a wait in whole seconds, -1 for an unknown (negative) one.
func waitSeconds(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return int64(d / time.Second)
}

// putBack adds positions and their waits to the marks of event ev kept for
// the next refresh (also the way back for marks a failed refresh took). A
// position marked twice keeps the shorter known wait.
func (s *Snapshots) putBack(marks *map[string]map[int64]int64, ev string, ps, waits []int64) {
	if len(ps) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if *marks == nil {
		*marks = map[string]map[int64]int64{}
	}
	m := (*marks)[ev]
	if m == nil {
		m = map[int64]int64{}
		(*marks)[strings.Clone(ev)] = m
	}
	for i, p := range ps {
		w := int64(-1)
		if i < len(waits) {
			w = waits[i]
		}
		if old, ok := m[p]; ok && (w < 0 || (old >= 0 && old <= w)) {
			continue
		}
		m[p] = w
	}
}

// take removes and returns the marks of event ev and their waits.
func (s *Snapshots) take(marks *map[string]map[int64]int64, ev string) (ps, waits []int64) {
	s.mu.Lock()
	m := (*marks)[ev]
	delete(*marks, ev)
	s.mu.Unlock()
	ps, waits = make([]int64, 0, len(m)), make([]int64, 0, len(m))
	for p, w := range m {
		ps = append(ps, p)
		waits = append(waits, w)
	}
	return ps, waits
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
