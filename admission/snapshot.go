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
}

// configs is what Snapshots needs from the event store.
type configs interface {
	IDs(ctx context.Context) ([]string, error)
	Get(ctx context.Context, id string) (event.Config, error)
}

// stock is what Snapshots needs from the claim store.
type stock interface {
	Live(ctx context.Context, ev string, buckets int, pending bool) (claim.Live, error)
}

// Snapshots keeps a node-local view of every sale and advances every
// frontier on each tick. Reads are lock-free; Refresh is called by one
// goroutine (Run). The zero value is not usable: use NewSnapshots.
type Snapshots struct {
	configs  configs
	frontier *Frontier
	stock    stock
	now      func() time.Time
	view     atomic.Pointer[map[string]*Sale]

	mu       sync.Mutex
	present  map[string]map[int64]struct{}
	claimed  map[string]map[int64]struct{}
	sessions map[string]map[string]int64 // event -> jti -> position
}

// NewSnapshots returns an empty view.
func NewSnapshots(c configs, f *Frontier, s stock) *Snapshots {
	sn := &Snapshots{configs: c, frontier: f, stock: s, now: time.Now}
	sn.view.Store(&map[string]*Sale{})
	return sn
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
	cfg, err := s.configs.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	live, err := s.stock.Live(ctx, id, cfg.Buckets, cfg.MaxActive > 0)
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
		if order, err = s.frontier.ReadOrder(ctx, id, &cfg, po); err != nil {
			return nil, err
		}
	}
	step := Step{
		Start: cfg.WindowEnd(), Rate: cfg.AdmitRatePerSecond, Hold: cfg.Paused || left <= 0,
		Grace:   time.Duration(cfg.NoShowGraceSeconds) * time.Second,
		Lottery: cfg.Mode == event.Lottery, Units: cfg.OnSale() + live.Released,
		MaxActive: cfg.MaxActive, AdmissionTTL: time.Duration(cfg.AdmissionTTLSeconds) * time.Second,
		Present: s.take(&s.present, id), Claimed: s.take(&s.claimed, id), Pending: live.Pending,
		Order: order, HealthChecked: cfg.HealthChecked(),
	}
	sessions := s.takeSessions(id)
	if err := s.frontier.recordSessions(ctx, id, sessions, step.AdmissionTTL); err != nil {
		s.putBackSessions(id, sessions)
		s.putBack(&s.present, id, step.Present)
		s.putBack(&s.claimed, id, step.Claimed)
		return nil, err
	}
	r, err := s.frontier.Advance(ctx, id, step)
	if err != nil {
		s.putBack(&s.present, id, step.Present)
		s.putBack(&s.claimed, id, step.Claimed)
		return nil, err
	}
	now := s.now()
	sale := &Sale{Config: cfg, Reading: r, Remaining: left, BucketStock: perBucket, SoldOut: left <= 0, Refreshed: now, Rate: cfg.AdmitRatePerSecond, Order: order}
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
func (s *Snapshots) Present(ev string, pos int64) { s.putBack(&s.present, ev, []int64{pos}) }

// Claimed records that the holder of position pos in event ev was granted a
// claim: the next refresh ends the admission's hold on max_active (a pending
// claim holds it while it is pending). Safe for concurrent use; no Redis.
func (s *Snapshots) Claimed(ev string, pos int64) { s.putBack(&s.claimed, ev, []int64{pos}) }

// putBack adds positions to the marks of event ev kept for the next refresh
// (also the way back for marks a failed refresh took).
func (s *Snapshots) putBack(marks *map[string]map[int64]struct{}, ev string, ps []int64) {
	if len(ps) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if *marks == nil {
		*marks = map[string]map[int64]struct{}{}
	}
	m := (*marks)[ev]
	if m == nil {
		m = map[int64]struct{}{}
		(*marks)[strings.Clone(ev)] = m
	}
	for _, p := range ps {
		m[p] = struct{}{}
	}
}

// take removes and returns the marks of event ev.
func (s *Snapshots) take(marks *map[string]map[int64]struct{}, ev string) []int64 {
	s.mu.Lock()
	m := (*marks)[ev]
	delete(*marks, ev)
	s.mu.Unlock()
	out := make([]int64, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	return out
}

// Run refreshes every interval until ctx is done. Errors go to onErr.
func (s *Snapshots) Run(ctx context.Context, every time.Duration, onErr func(error)) error {
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
