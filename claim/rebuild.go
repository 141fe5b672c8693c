package claim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrRebuildRunning is returned while another rebuild holds the event.
var ErrRebuildRunning = errors.New("claim: another rebuild of this event is running")

// configs is what a rebuild needs from the event store.
type configs interface {
	Get(ctx context.Context, id string) (event.Config, error)
	Put(ctx context.Context, c event.Config) (event.Config, error)
}

// Rebuilder recomputes an event's stock and claim state in Redis from the
// order stream, after a Redis failover lost writes (see the package
// documentation for the protocol). It is safe for concurrent use; two
// rebuilds of one event exclude each other.
type Rebuilder struct {
	svc     *Service
	js      jetstream.JetStream
	configs configs
	now     func() time.Time
}

// NewRebuilder returns a Rebuilder publishing outboxes through svc, reading
// the stream and the order worker's records from js, and pausing events
// through configs.
func NewRebuilder(svc *Service, js jetstream.JetStream, configs configs) *Rebuilder {
	return &Rebuilder{svc: svc, js: js, configs: configs, now: svc.now}
}

// Report is the account of one rebuild.
type Report struct {
	Event string `json:"event"`
	// OnSale is supply − reserve_units.
	OnSale int64 `json:"on_sale"`
	// Before and After are the Redis totals around the rebuild.
	Before Totals `json:"before"`
	After  Totals `json:"after"`
	// Published counts outbox entries published before the stream was read;
	// Republished the events of claims Redis held and the stream lacked.
	Published   int `json:"published"`
	Republished int `json:"republished"`
	// Granted and Released count distinct claims on the stream; Confirmed
	// those the order worker recorded.
	Granted   int `json:"granted"`
	Released  int `json:"released"`
	Confirmed int `json:"confirmed"`
	// Cancelled counts claims staff cancelled (order_cancelled events);
	// Restocked those whose unit went back to the stock.
	Cancelled int `json:"cancelled"`
	Restocked int `json:"restocked"`
	// Superseded counts grants on the stream that the fence voids: decided
	// on stock an earlier rebuild (or this one) replaced, stored after its
	// epoch marker, never acknowledged, not counted.
	Superseded int `json:"superseded"`
	// Epoch is the stream sequence of this rebuild's epoch marker, the
	// buckets' new epoch.
	Epoch uint64 `json:"epoch"`
	// Available is what the buckets hold afterwards: OnSale − Granted +
	// Released + Restocked.
	Available int64 `json:"available"`
	// Oversold is above 0 only if the stream holds more live grants than
	// units on sale.
	Oversold int64 `json:"oversold"`
	// Paused says whether the event is paused after the rebuild: as it was
	// before, unless its config was written while the rebuild ran.
	Paused bool `json:"paused"`
	// Seconds is how long the rebuild took.
	Seconds float64 `json:"seconds"`
}

// onlySuperseded reports whether err (possibly joined) holds nothing but
// ErrSuperseded: outbox grants of an epoch a rebuild already ended, which
// the rebuild drops (they were never acknowledged).
func onlySuperseded(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlySuperseded(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, ErrSuperseded)
}

// freezeAbandoned is when another rebuild's freeze counts as abandoned.
const freezeAbandoned = 5 * time.Minute

// Rebuild pauses event ev, freezes its buckets, publishes their outboxes,
// reads every order event of ev from the stream, rewrites each bucket
// (stock, stats, claim records, per-user held claims and history,
// idempotency keys, expiry index) and resumes: the event's paused flag is
// left as it was before — unless the event's config was written while the
// rebuild ran (an operator paused or resumed it): then the flag stays as
// that writer left it, so a pause issued during a rebuild is never lost
// (Report.Paused says what it is). On an error before any bucket is
// rewritten, the buckets are unfrozen and the event stays paused; after,
// they stay frozen (and paused) until a rebuild succeeds.
func (r *Rebuilder) Rebuild(ctx context.Context, ev string) (Report, error) {
	start := r.now()
	cfg, err := r.configs.Get(ctx, ev)
	if err != nil {
		return Report{}, err
	}
	// What the rebuild restores is the flag its own pause replaced, not
	// the one read above: a pause stored between the two reads is the
	// operator's, and stays.
	paused, wasPaused, err := r.pause(ctx, ev)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Event: ev, OnSale: cfg.OnSale(), Paused: true}
	sale := SaleOf(cfg)
	token, err := r.freeze(ctx, sale)
	if err != nil {
		return rep, err
	}
	// A staff save holds the buckets from before it stores its
	// configuration until it has laid its stock, so once they are frozen
	// the stored configuration is the one the stock follows.
	if cfg, err = r.configs.Get(ctx, ev); err == nil && cfg.Buckets != sale.Buckets {
		err = fmt.Errorf("rebuild %s: the bucket count changed meanwhile; run the rebuild again", ev)
	}
	if err != nil {
		if uerr := r.unfreeze(ctx, sale, token); uerr != nil {
			err = errors.Join(err, uerr)
		}
		return rep, err
	}
	rep.OnSale = cfg.OnSale()
	plan, err := r.prepare(ctx, &cfg, &rep)
	if err != nil {
		if uerr := r.unfreeze(ctx, sale, token); uerr != nil {
			err = errors.Join(err, uerr)
		}
		return rep, err
	}
	if err := r.svc.store.restoreEvent(ctx, ev, plan, token); err != nil {
		return rep, fmt.Errorf("rebuild %s: %w (buckets stay frozen: run the rebuild again)", ev, err)
	}
	if err := r.unfreeze(ctx, sale, token); err != nil {
		return rep, err
	}
	if rep.Paused, err = r.restorePaused(ctx, ev, wasPaused, paused.Version); err != nil {
		return rep, err
	}
	if rep.After, err = r.svc.store.Totals(ctx, sale); err != nil {
		return rep, err
	}
	rep.Seconds = r.now().Sub(start).Seconds()
	return rep, nil
}

// prepare publishes the outboxes and plans the buckets from the stream.
func (r *Rebuilder) prepare(ctx context.Context, cfg *event.Config, rep *Report) (*restorePlan, error) {
	var err error
	if rep.Before, err = r.svc.store.Totals(ctx, SaleOf(*cfg)); err != nil {
		return nil, err
	}
	var flushed []OrderEvent
	for b := range cfg.Buckets {
		evs, err := r.svc.publishOutbox(ctx, cfg.ID, b, 0)
		if err != nil && !onlySuperseded(err) {
			return nil, fmt.Errorf("rebuild %s: publish outbox: %w", cfg.ID, err)
		}
		flushed = append(flushed, evs...)
	}
	rep.Published = len(flushed)
	// The epoch marker ends the buckets' epochs on the stream: a grant of
	// an old epoch stored after it is void (never acknowledged, never
	// counted), so whatever the read below misses cannot be sold twice.
	mark, err := publishMarker(ctx, r.js, cfg.ID, r.now())
	if err != nil {
		return nil, fmt.Errorf("rebuild %s: %w", cfg.ID, err)
	}
	rep.Epoch = mark
	evs, err := ReadEvents(ctx, r.js, cfg.ID)
	if err != nil {
		return nil, err
	}
	st, err := stream(ctx, r.js)
	if err != nil {
		return nil, fmt.Errorf("rebuild %s: %w", cfg.ID, err)
	}
	markers, err := readMarkers(ctx, st, cfg.ID)
	if err != nil {
		return nil, err
	}
	if len(markers) == 0 || markers[len(markers)-1] < mark {
		return nil, fmt.Errorf("rebuild %s: epoch marker %d not found on the stream", cfg.ID, mark)
	}
	markers = markers[:slices.Index(markers, mark)+1]
	// Claims Redis holds that the stream lacks (it lost them, or they are
	// older than its history): republished in the new epoch, and counted
	// either way. A claim the stream holds only as void is not lacking:
	// it was never acknowledged.
	lost, err := r.svc.missing(ctx, SaleOf(*cfg), seenOf(evs), nil, 0, math.MaxInt)
	if err != nil {
		return nil, err
	}
	for i := range lost {
		if lost[i].ev.Type == KindGranted {
			lost[i].ev.Epoch = mark
			lost[i] = encoded(lost[i].ev)
		}
	}
	if _, err := r.svc.publishMany(ctx, cfg.ID, lost); err != nil {
		return nil, fmt.Errorf("rebuild %s: republish: %w", cfg.ID, err)
	}
	for _, m := range lost {
		evs = append(evs, m.ev)
	}
	rep.Republished = len(lost)
	statuses, err := OrderStatuses(ctx, r.js, cfg.ID)
	if err != nil {
		return nil, err
	}
	plan := planRestore(cfg, evs, statuses, markers, r.now())
	rep.Granted, rep.Released, rep.Confirmed = plan.granted, plan.released, plan.confirmed
	rep.Cancelled, rep.Restocked = plan.cancelled, plan.restocked
	rep.Available, rep.Oversold, rep.Superseded = plan.available, plan.oversold, plan.superseded
	return plan, nil
}

// freeze freezes every bucket of sale with a new token and returns it. On
// an error, the buckets frozen so far are unfrozen.
func (r *Rebuilder) freeze(ctx context.Context, sale Sale) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	token := hex.EncodeToString(b[:]) + "@" + strconv.FormatInt(r.now().UnixMilli(), 10)
	for i := range sale.Buckets {
		ok, err := r.svc.store.lua.freeze.Run(ctx, r.svc.store.rdb, []string{bucketOf(sale.ID, i).frozen()},
			token, r.now().UnixMilli(), freezeAbandoned.Milliseconds()).Int()
		if err == nil && ok == 0 {
			err = ErrRebuildRunning
		}
		if err != nil {
			if uerr := r.unfreeze(ctx, Sale{ID: sale.ID, Buckets: i}, token); uerr != nil {
				err = errors.Join(err, uerr)
			}
			return "", fmt.Errorf("rebuild %s: freeze bucket %d: %w", sale.ID, i, err)
		}
	}
	return token, nil
}

// unfreeze lifts token's freeze from sale's buckets (a partial freeze
// passes a Sale with only the buckets it froze).
func (r *Rebuilder) unfreeze(ctx context.Context, sale Sale, token string) error {
	var errs []error
	for i := range sale.Buckets {
		if err := r.svc.store.lua.unfreeze.Run(ctx, r.svc.store.rdb, []string{bucketOf(sale.ID, i).frozen()}, token).Err(); err != nil {
			errs = append(errs, fmt.Errorf("unfreeze %s/%d: %w", sale.ID, i, err))
		}
	}
	return errors.Join(errs...)
}

// pause sets the event's paused flag with a compare-and-set, retrying a
// few times when another writer wins, and returns the stored config and
// whether it was paused already. A save its replicas have not copied
// (event.ErrNotReplicated) counts as saved: the rebuild runs on the
// primary, and a failover meanwhile needs another rebuild anyway.
func (r *Rebuilder) pause(ctx context.Context, ev string) (event.Config, bool, error) {
	for attempt := 0; ; attempt++ {
		cfg, err := r.configs.Get(ctx, ev)
		if err != nil || cfg.Paused {
			return cfg, cfg.Paused, err
		}
		cfg.Paused = true
		saved, err := r.configs.Put(ctx, cfg)
		if errors.Is(err, event.ErrConflict) && attempt < 5 {
			continue
		}
		if errors.Is(err, event.ErrNotReplicated) {
			err = nil
		}
		return saved, false, err
	}
}

// restorePaused sets the event's paused flag back to was, only if its
// config is still at version (the one the rebuild's pause left): a write
// since — an operator's pause or resume — decides instead. It returns
// whether the event is paused now.
func (r *Rebuilder) restorePaused(ctx context.Context, ev string, was bool, version int64) (bool, error) {
	cfg, err := r.configs.Get(ctx, ev)
	if err != nil {
		return true, err
	}
	if cfg.Version != version || cfg.Paused == was {
		return cfg.Paused, nil
	}
	cfg.Paused = was
	if _, err := r.configs.Put(ctx, cfg); errors.Is(err, event.ErrConflict) {
		// Written meanwhile: that writer decides.
		cfg, err = r.configs.Get(ctx, ev)
		return cfg.Paused || err != nil, err
	} else if err != nil && !errors.Is(err, event.ErrNotReplicated) {
		// Not copied yet, the resume stands; a failover would bring back
		// the pause, which errs toward holding.
		return true, err
	}
	return was, nil
}
