package admission

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

// Sale is one node's view of one event, refreshed on every tick. Values are
// immutable once published: readers may keep them.
type Sale struct {
	Config event.Config
	// ConfigAt is the Redis TIME at which Config was read (Store.GetAt):
	// joins and frontier steps act on it until event.MaxViewAge after.
	ConfigAt time.Time
	Reading
	// Perm orders the window once it is frozen (Window > 0).
	Perm queue.Permutation
	// Order is the view of a queue of join shards (JoinShards > 1), nil
	// for a queue on one slot.
	Order *queue.Order
	// Remaining is the stock left for sale.
	Remaining int64
	// BucketStock is the stock left in each of the event's buckets; the
	// claim step picks donor buckets from it.
	BucketStock []int64
	// SoldOut is true once Remaining reached zero.
	SoldOut bool
	// Rate is the measured admission rate (positions per second), smoothed.
	Rate float64
	// Refreshed is the node's clock when the view was taken.
	Refreshed time.Time
	// Stale, in a safety-net room, is a position at or below which every
	// admission is older than the admission TTL plus the grace: status no
	// longer hands those positions a token (they left; they join again).
	// The node learns it from its own ticks (staleFloor), so it is 0 for
	// that long after a node starts.
	Stale int64
	// marks are the samples Stale is taken from (safety-net rooms only).
	marks []mark
	// Lanes are the views of the event's lanes, in the order of
	// Config.Lanes (lane index i+1); nil without lanes.
	Lanes []LaneView
	// HeldBehind is true while the node has not read the whole held log
	// (see Held).
	HeldBehind bool
}

// LaneView is one node's view of one lane of an event (see event.Lane).
type LaneView struct {
	Reading
	// Perm orders the lane's window once it is frozen (Window > 0).
	Perm queue.Permutation
	// Rate is the lane's admission rate: its share of admit_rate.
	Rate float64
}

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
// frontier on each tick. Reads are lock-free; Refresh is called by one
// goroutine (Run). The zero value is not usable: use NewSnapshots.
type Snapshots struct {
	configs  configs
	frontier *Frontier
	stock    stock
	now      func() time.Time
	clock    Clock // nil: none to keep on Redis TIME
	view     atomic.Pointer[map[string]*Sale]
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

// NewSnapshots returns an empty view.
func NewSnapshots(c configs, f *Frontier, s stock) *Snapshots {
	sn := &Snapshots{configs: c, frontier: f, stock: s, now: time.Now}
	sn.view.Store(&map[string]*Sale{})
	return sn
}

// UseClock makes c the view's clock; call it before the first Refresh.
// Without it the view reads time.Now and measures nothing.
func (s *Snapshots) UseClock(c Clock) {
	s.now, s.clock = c.Now, c
}

// Get returns the current view of event id.
func (s *Snapshots) Get(id string) (*Sale, bool) {
	v, ok := (*s.view.Load())[id]
	return v, ok
}

// All returns every sale in the current view.
func (s *Snapshots) All() []*Sale {
	m := *s.view.Load()
	out := make([]*Sale, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// Refresh advances every frontier and refreshes the view. An event whose
// refresh fails keeps its previous view; the first error is returned.
func (s *Snapshots) Refresh(ctx context.Context) error {
	ids, err := s.configs.IDs(ctx)
	if err != nil {
		return err
	}
	fresh := make(map[string]*Sale, len(ids))
	var first error
	for _, id := range ids {
		prev, _ := s.Get(id)
		sale, err := s.refreshOne(ctx, id, prev)
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

// RefreshOne refreshes a single event now (after an admin change).
func (s *Snapshots) RefreshOne(ctx context.Context, id string) error {
	id = strings.Clone(id) // kept as a map key
	prev, _ := s.Get(id)
	sale, err := s.refreshOne(ctx, id, prev)
	if err != nil {
		return err
	}
	s.merge(map[string]*Sale{id: sale})
	return nil
}

// merge publishes fresh views over the current ones. Views are never
// dropped, so a refresh that listed ids before an event was created cannot
// hide it; a newer view is never replaced by an older one.
func (s *Snapshots) merge(fresh map[string]*Sale) {
	for {
		old := s.view.Load()
		next := make(map[string]*Sale, len(*old)+len(fresh))
		for k, v := range *old {
			next[k] = v
		}
		for k, v := range fresh {
			if cur, ok := next[k]; !ok || !v.ServerTime.Before(cur.ServerTime) {
				next[k] = v
			}
		}
		if s.view.CompareAndSwap(old, &next) {
			return
		}
	}
}

func (s *Snapshots) refreshOne(ctx context.Context, id string, prev *Sale) (*Sale, error) {
	cfg, seen, err := s.configs.GetAt(ctx, id)
	if err != nil {
		return nil, err
	}
	until := seen.Add(event.MaxViewAge)
	live, err := s.stock.Live(ctx, claim.SaleOf(cfg), cfg.MaxActive > 0)
	if err != nil {
		return nil, err
	}
	perBucket := live.Stock
	var left int64
	for _, n := range perBucket {
		left += n
	}
	var order *queue.Order
	if cfg.JoinShards > 1 {
		var po *queue.Order
		if prev != nil {
			po = prev.Order
		}
		if order, err = s.frontier.ReadOrder(ctx, id, &cfg, until, po); err != nil {
			return nil, err
		}
	}
	// A safety-net room has no stock: it is never sold out. Stock not
	// known (being laid or rebuilt, or not laid yet) is not gone: the
	// view keeps what it knew.
	soldOut := left <= 0 && !cfg.IsSafetyNet()
	if !live.Known {
		soldOut = prev != nil && prev.SoldOut
	}
	step := Step{
		Start: cfg.WindowEnd(), Rate: cfg.AdmitRatePerSecond * cfg.DefaultShare(), Hold: cfg.Paused || soldOut,
		Grace:   time.Duration(cfg.NoShowGraceSeconds) * time.Second,
		Lottery: cfg.Mode == event.Lottery, Units: cfg.OnSale() + live.Released,
		MaxActive: cfg.MaxActive, AdmissionTTL: time.Duration(cfg.AdmissionTTLSeconds) * time.Second,
		Pending: live.Pending, Order: order, MaxCredit: time.Duration(s.credit.Load()),
		HealthChecked: cfg.HealthChecked(), ViewUntil: until,
	}
	sessions := s.takeSessions(id)
	if err := s.frontier.recordSessions(ctx, id, sessions, step.AdmissionTTL); err != nil {
		s.putBackSessions(id, sessions)
		return nil, err
	}
	var sent time.Time
	if s.clock != nil {
		sent = s.clock.Local()
	}
	step.Present, step.PresentWait = s.take(&s.present, id)
	step.Claimed, step.ClaimedWait = s.take(&s.claimed, id)
	held := s.heldOf(id)
	step.HeldFrom = held.offset()
	step.Late, _ = s.take(&s.late, id)
	r, err := s.frontier.Advance(ctx, id, step)
	if err == nil && s.clock != nil {
		s.clock.Observe(sent, s.clock.Local(), r.ServerTime)
	}
	if err != nil {
		s.putBack(&s.present, id, step.Present, step.PresentWait)
		s.putBack(&s.claimed, id, step.Claimed, step.ClaimedWait)
		s.putBack(&s.late, id, step.Late, nil)
		return nil, err
	}
	held.apply(step.HeldFrom, r.HeldLen, r.HeldLog)
	r.HeldLog = nil // applied; the view need not keep it
	heldBehind := held.behind(r.HeldLen)
	lanes, err := s.refreshLanes(ctx, &cfg, step, prev)
	if err != nil {
		return nil, err
	}
	now := s.now()
	sale := &Sale{Config: cfg, ConfigAt: seen, Reading: r, Remaining: left, BucketStock: perBucket, SoldOut: soldOut, Refreshed: now, Rate: step.Rate, Order: order, Lanes: lanes, HeldBehind: heldBehind}
	if order != nil {
		sale.Joined = order.Joined()
	}
	if prev != nil {
		sale.Perm = prev.Perm
		sale.Rate = prev.Rate
		if dt := r.ServerTime.Sub(prev.ServerTime).Seconds(); dt > 0 && r.Frontier >= prev.Frontier && prev.Config.Version > 0 {
			inst := (r.Frontier - prev.Frontier) / dt
			if r.Frontier < float64(r.Joined) && !cfg.Paused && !r.HealthHeld {
				// Only a queue with people still waiting measures the rate.
				sale.Rate = 0.8*prev.Rate + 0.2*inst
			}
		}
	}
	if cfg.IsSafetyNet() {
		var prevMarks []mark
		if prev != nil {
			prevMarks = prev.marks
		}
		ttl := time.Duration(cfg.AdmissionTTLSeconds+cfg.NoShowGraceSeconds) * time.Second
		sale.marks, sale.Stale = staleFloor(prevMarks, r.ServerTime, int64(r.Frontier), ttl)
	}
	if r.WindowFrozen && r.Window > 0 && sale.Perm.Size() != r.Window {
		seed, err := queue.ParseSeedHex(cfg.Seed)
		if err != nil {
			return nil, fmt.Errorf("event %s: seed: %w", id, err)
		}
		if sale.Perm, err = queue.NewPermutation(seed, r.Window); err != nil {
			return nil, fmt.Errorf("event %s: %w", id, err)
		}
	}
	return sale, nil
}

// Present records that the holder of position pos in event ev was issued
// an admission token; the next refresh marks the position present (so it is
// not counted as a no-show) and active until the token expires. Safe for
// concurrent use; cheap (no Redis).
func (s *Snapshots) Present(ev string, pos int64) { s.PresentAfter(ev, pos, -1) }

// PresentAfter is Present for a holder who waited waited from joining to
// this admission token (negative: unknown). The refresh that first marks
// the position present adds the wait to the event's report tally (see
// Tally), once per position.
func (s *Snapshots) PresentAfter(ev string, pos int64, waited time.Duration) {
	s.mark(&s.present, ev, pos, waitSeconds(waited))
}

// Claimed records that the holder of position pos in event ev was granted a
// claim: the next refresh ends the admission's hold on max_active (a pending
// claim holds it while it is pending). Safe for concurrent use; no Redis.
func (s *Snapshots) Claimed(ev string, pos int64) { s.ClaimedAfter(ev, pos, -1) }

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

// ClaimedAfter is Claimed for a holder who claimed waited after their
// admission token was issued (negative: unknown); the position's first
// grant adds it to the report tally, once per position.
func (s *Snapshots) ClaimedAfter(ev string, pos int64, waited time.Duration) {
	s.mark(&s.claimed, ev, pos, waitSeconds(waited))
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

// Run refreshes every interval until ctx is done. Errors go to onErr. From
// then on a step credits at most MaxCreditFor(every).
func (s *Snapshots) Run(ctx context.Context, every time.Duration, onErr func(error)) error {
	s.credit.Store(int64(MaxCreditFor(every)))
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
