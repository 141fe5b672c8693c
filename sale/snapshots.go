// Package sale is a node's read model of every sale: what the node
// currently believes about each one (admission.Sale), so that status,
// claims, metrics and reports answer without Redis. It owns keeping that
// view: on each tick (Run, Refresh) it reads every sale's configuration,
// stock and join-shard order, asks admission.StepFor for the step, hands
// the frontier the marks the node collected since the last tick (presence,
// claims, checkout sessions, late shows), steps it, writes the ETA
// sample's status answers (ShownETA) for the post-sale report, and
// publishes the reading with the measured rate and pace (admission.Measure,
// which the ETA reads), the stale floor and the held positions.
// How fast people get in is not decided here: that rule is admission's
// (StepFor). A staff save reloads the view (Reload); only the tick steps
// the frontier.
//
// Views are immutable once published and read lock-free; a mark a failed
// tick took is put back for the next one, and the frontier script reads
// every key before it writes, so each mark counts exactly once.
package sale

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
)

// configs is what Snapshots needs from the event store.
type configs interface {
	IDs(ctx context.Context) ([]string, error)
	GetAt(ctx context.Context, id string) (event.Config, time.Time, error)
}

// stock is what Snapshots needs from the claim store.
type stock interface {
	Live(ctx context.Context, sale claim.Sale, pending bool) (claim.Live, error)
}

// Snapshots keeps a node-local view of every sale and advances every
// frontier on each tick. Reads (Get, All, Held) and marks (Present,
// Claimed, Session, LateShow) are safe for concurrent use and never touch
// Redis; Refresh is called by one goroutine (Run), and Reload may run
// beside it. The zero value is not usable: use NewSnapshots.
type Snapshots struct {
	configs  configs
	frontier *admission.Frontier
	stock    stock
	now      func() time.Time
	clock    Clock // nil: none to keep on Redis TIME
	view     atomic.Pointer[map[string]*admission.Sale]
	// credit is Step.MaxCredit, set by Run from its tick (0: the default).
	credit atomic.Int64

	mu sync.Mutex
	// present and claimed map positions to how long their holder waited
	// (whole seconds: join to admission token, admission to claim), -1
	// when unknown; see PresentAfter and ClaimedAfter.
	present  map[string]map[int64]int64
	claimed  map[string]map[int64]int64
	sessions map[string]map[string]int64 // event -> jti -> position
	late     map[string]map[int64]int64  // held positions asking to come in (LateShow)
	etas     map[string]*etaMemo         // the ETA sample's answers (ShownETA)

	held sync.Map // event -> *heldSet
}

// Clock is a node's clock as Snapshots uses it (a *clock.Clock): Now for
// the view's time, Local and Observe to measure its offset to Redis TIME on
// every frontier step.
type Clock interface {
	Now() time.Time
	Local() time.Time
	Observe(sent, received, server time.Time) bool
}

// NewSnapshots returns an empty view that reads configurations from c and
// stock from s, and steps frontiers with f.
func NewSnapshots(c configs, f *admission.Frontier, s stock) *Snapshots {
	sn := &Snapshots{configs: c, frontier: f, stock: s, now: time.Now}
	sn.view.Store(&map[string]*admission.Sale{})
	return sn
}

// UseClock makes c the view's clock; call it before the first Refresh.
// Without it the view reads time.Now and measures nothing.
func (s *Snapshots) UseClock(c Clock) {
	s.now, s.clock = c.Now, c
}

// Get returns the current view of event id.
func (s *Snapshots) Get(id string) (*admission.Sale, bool) {
	v, ok := (*s.view.Load())[id]
	return v, ok
}

// All returns every sale in the current view.
func (s *Snapshots) All() []*admission.Sale {
	m := *s.view.Load()
	out := make([]*admission.Sale, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// Refresh is one tick: it steps every frontier and refreshes the view. An
// event whose step fails keeps its previous view; the first error is
// returned.
func (s *Snapshots) Refresh(ctx context.Context) error {
	ids, err := s.configs.IDs(ctx)
	if err != nil {
		return err
	}
	fresh := make(map[string]*admission.Sale, len(ids))
	var first error
	for _, id := range ids {
		prev, _ := s.Get(id)
		sale, err := s.step(ctx, id, prev)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		fresh[id] = sale
	}
	s.merge(fresh)
	return first
}

// merge publishes fresh views over the current ones. Views are never
// dropped, so a refresh that listed ids before an event was created cannot
// hide it; a newer view is never replaced by an older one (replaces).
func (s *Snapshots) merge(fresh map[string]*admission.Sale) {
	for {
		old := s.view.Load()
		next := make(map[string]*admission.Sale, len(*old)+len(fresh))
		for k, v := range *old {
			next[k] = v
		}
		for k, v := range fresh {
			if cur, ok := next[k]; !ok || replaces(v, cur) {
				next[k] = v
			}
		}
		if s.view.CompareAndSwap(old, &next) {
			return
		}
	}
}

// replaces reports whether a tick's view v may replace the published view
// cur. The configuration decides first: every save increases its version
// (event.Store.Put), so a view built from an older one — a tick that read
// the configuration just before a save whose Reload has published it —
// never replaces one built from a newer one, whatever their readings' Redis
// times: a save holds from its 200 on. An older version read later by
// Redis TIME is what the store has now (a failover lost the newer save),
// so it replaces the lost one. Views of one configuration are ordered by
// their readings.
func replaces(v, cur *admission.Sale) bool {
	if v.Config.Version != cur.Config.Version {
		return v.Config.Version > cur.Config.Version || v.ConfigAt.After(cur.ConfigAt)
	}
	return !v.ServerTime.Before(cur.ServerTime)
}

// Run refreshes every interval until ctx is done. Errors go to onErr. From
// then on a step credits at most admission.MaxCreditFor(every).
func (s *Snapshots) Run(ctx context.Context, every time.Duration, onErr func(error)) error {
	s.credit.Store(int64(admission.MaxCreditFor(every)))
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := s.Refresh(ctx); err != nil && ctx.Err() == nil && onErr != nil {
			onErr(err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
