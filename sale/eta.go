package sale

import (
	"context"
	"strings"
	"time"

	"github.com/anteroom/anteroom/admission"
)

// etaPerson is one sampled person of an event, as ETA answers key them.
type etaPerson struct {
	lane int
	who  uint64
}

// etaKept is what the node kept of one sampled person: how many waiting
// answers, and whether the admitted one.
type etaKept struct {
	waiting  int
	admitted bool
}

// etaMemo is what the node keeps of one event's ETA sample: answers not
// yet written, and what it kept of each sampled person (one entry a
// sampled person, at most admission.ETASamples of each queue's stride).
type etaMemo struct {
	pending []admission.ETAAnswer
	kept    map[etaPerson]etaKept
}

// ShownETA records, for the ETA's error in the post-sale report, the
// status answer d that user was given at now from view v, when user is in
// the ETA sample of their queue (admission.ETASampled, by the view's
// count of who joined it): a waiting answer with the eta_seconds shown,
// or the answer that handed the admission token. The node keeps at most
// admission.MaxETAAnswers waiting answers and one admitted answer of each
// person, and the next tick writes them to Redis (admission.RecordETAs).
// Answers in other states (the draw not done, paused, sold out) carry no
// wait and are not kept. Safe for concurrent use; no Redis, and for the
// people not sampled no lock.
func (s *Snapshots) ShownETA(v *admission.Sale, user string, now time.Time, d admission.Decision) {
	if d.State != admission.Waiting && d.State != admission.Admitted {
		return
	}
	joined := v.Joined
	if d.Lane > 0 {
		if d.Lane > len(v.Lanes) {
			return
		}
		joined = v.Lanes[d.Lane-1].Joined
	}
	ev := v.Config.ID
	who := admission.ETAWho(ev, user)
	if !admission.ETASampled(who, joined) {
		return
	}
	a := admission.ETAAnswer{Lane: d.Lane, Who: who, At: now, Admitted: d.State == admission.Admitted, ETASeconds: int64(d.ETA.Round(time.Second) / time.Second)}
	p := etaPerson{lane: d.Lane, who: who}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.etas == nil {
		s.etas = map[string]*etaMemo{}
	}
	m := s.etas[ev]
	if m == nil {
		m = &etaMemo{kept: map[etaPerson]etaKept{}}
		s.etas[strings.Clone(ev)] = m
	}
	k := m.kept[p]
	switch {
	case k.admitted: // the wait is over: later answers tell nothing
		return
	case a.Admitted:
		k.admitted = true
	case k.waiting >= admission.MaxETAAnswers-1:
		return
	default:
		k.waiting++
	}
	m.kept[p] = k
	m.pending = append(m.pending, a)
}

// flushETAs writes the ETA answers kept of event ev to Redis; answers a
// failed write took are kept for the next tick.
func (s *Snapshots) flushETAs(ctx context.Context, ev string) error {
	s.mu.Lock()
	m := s.etas[ev]
	var answers []admission.ETAAnswer
	if m != nil {
		answers, m.pending = m.pending, nil
	}
	s.mu.Unlock()
	if len(answers) == 0 {
		return nil
	}
	err := s.frontier.RecordETAs(ctx, ev, answers)
	if err != nil {
		s.mu.Lock()
		m.pending = append(answers, m.pending...)
		s.mu.Unlock()
	}
	return err
}
