package lifecycle

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/luascript"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

//go:embed record.lua
var recordLua string

// MaxYourTurnPerTick bounds the your_turn events one observation records;
// a frontier that jumps further is caught up over the next ticks.
const MaxYourTurnPerTick = 512

// Recorder turns what a node sees of each sale into lifecycle events and
// publishes them (see the package comment). Every node runs one; it is safe
// for concurrent use, though one goroutine (Run) normally drives it.
type Recorder struct {
	rdb    redis.UniversalClient
	js     jetstream.JetStream
	record *redis.Script
	// queueing records safety-net rooms' queueing changes (queueing.go).
	queueing *redis.Script

	mu      sync.Mutex
	cursors map[string]int64 // your_turn cursor per sale from the last reply
}

// NewRecorder returns a Recorder on rdb that publishes to js (the stream
// must exist: EnsureStream).
func NewRecorder(rdb redis.UniversalClient, js jetstream.JetStream) *Recorder {
	return &Recorder{rdb: rdb, js: js, record: luascript.New(recordLua), queueing: luascript.New(queueingLua), cursors: map[string]int64{}}
}

func stateKey(ev string) string  { return "ar:{" + ev + "}:lc" }
func outboxKey(ev string) string { return "ar:{" + ev + "}:lc:out" }
func recentKey(ev string) string { return "ar:{" + ev + "}:lc:recent" }
func whoKey(ev string) string    { return "ar:{" + ev + "}:who" }

// Observe records the transitions sale shows (judged by its Redis TIME)
// and publishes the sale's outbox when it holds anything.
func (r *Recorder) Observe(ctx context.Context, sale *admission.Sale) error {
	cfg := &sale.Config
	at := sale.ServerTime
	opened, ended := !at.Before(cfg.StartsAt), !at.Before(cfg.EndsAt)
	seed := ""
	if sale.WindowFrozen {
		seed = cfg.Seed
	}
	args := []any{cfg.ID, cfg.Version, bit(cfg.Paused), bit(opened), bit(sale.WindowFrozen),
		bit(opened && sale.SoldOut), bit(ended), seed, cfg.SeedCommitment, sale.Window,
		bit(sale.HealthHeld), sale.HealthGen, bit(cfg.IsClosed())}
	turns, err := r.yourTurns(ctx, sale)
	if err != nil {
		return err
	}
	args = append(args, turns...)
	res, err := r.record.Run(ctx, r.rdb, []string{stateKey(cfg.ID), outboxKey(cfg.ID), recentKey(cfg.ID)}, args...).Int64Slice()
	if err != nil {
		return fmt.Errorf("lifecycle %s: %w", cfg.ID, err)
	}
	if len(res) != 2 {
		return fmt.Errorf("lifecycle %s: unexpected reply %v", cfg.ID, res)
	}
	r.mu.Lock()
	r.cursors[cfg.ID] = res[1]
	r.mu.Unlock()
	if cfg.IsSafetyNet() {
		if res[0], err = r.observeQueueing(ctx, sale); err != nil {
			return err
		}
	}
	if res[0] > 0 {
		return r.Flush(ctx, cfg.ID)
	}
	return nil
}

// yourTurns returns the script's cursor arguments: the cursor this node
// last saw, the new one, and a (position, seq, user) triple per position
// admitted since. A sale without a your_turn webhook moves the cursor
// without events, so one added later notifies only people admitted after.
func (r *Recorder) yourTurns(ctx context.Context, sale *admission.Sale) ([]any, error) {
	r.mu.Lock()
	cur, known := r.cursors[sale.Config.ID]
	r.mu.Unlock()
	admitted := min(int64(sale.Frontier), sale.Joined)
	framed := sale.Window == 0 || sale.Perm.Size() == sale.Window
	if !known || !sale.WindowFrozen || !framed || admitted <= cur {
		return []any{-1, -1}, nil
	}
	if !sale.Config.WantsYourTurn() {
		return []any{cur, admitted}, nil
	}
	upto := min(admitted, cur+MaxYourTurnPerTick)
	seqs := make([]string, 0, upto-cur)
	for pos := cur + 1; pos <= upto; pos++ {
		seq := pos
		if pos <= sale.Window {
			seq = sale.Perm.Inverse(pos)
		}
		seqs = append(seqs, strconv.FormatInt(seq, 10))
	}
	users, err := r.rdb.HMGet(ctx, whoKey(sale.Config.ID), seqs...).Result()
	if err != nil {
		return nil, fmt.Errorf("lifecycle %s: who: %w", sale.Config.ID, err)
	}
	out := make([]any, 0, 2+3*len(seqs))
	out = append(out, cur, upto)
	for i, seq := range seqs {
		user, _ := users[i].(string)
		out = append(out, cur+1+int64(i), seq, user)
	}
	return out, nil
}

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Flush publishes sale ev's outbox with Nats-Msg-Id = event id and removes
// each entry JetStream acknowledged. Safe to run on several nodes at once.
func (r *Recorder) Flush(ctx context.Context, ev string) error {
	out, err := r.rdb.HGetAll(ctx, outboxKey(ev)).Result()
	if err != nil {
		return fmt.Errorf("lifecycle %s: outbox: %w", ev, err)
	}
	type pending struct {
		id string
		f  jetstream.PubAckFuture
	}
	sent := make([]pending, 0, len(out))
	var first error
	for id, body := range out {
		var e struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.Type == "" {
			first = fmt.Errorf("lifecycle %s: outbox entry %s undecodable", ev, id)
			continue
		}
		msg := &nats.Msg{Subject: Subject(ev, e.Type), Data: []byte(body), Header: nats.Header{}}
		msg.Header.Set(jetstream.MsgIDHeader, id)
		f, err := r.js.PublishMsgAsync(msg)
		if err != nil {
			first = fmt.Errorf("lifecycle %s: publish: %w", ev, err)
			break
		}
		sent = append(sent, pending{id, f})
	}
	done := make([]string, 0, len(sent))
	for _, p := range sent {
		select {
		case <-p.f.Ok():
			done = append(done, p.id)
		case err := <-p.f.Err():
			first = fmt.Errorf("lifecycle %s: publish: %w", ev, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if len(done) > 0 {
		if err := r.rdb.HDel(ctx, outboxKey(ev), done...).Err(); err != nil {
			return fmt.Errorf("lifecycle %s: outbox: %w", ev, err)
		}
	}
	return first
}

// Recent returns sale ev's last n lifecycle events, newest first.
func (r *Recorder) Recent(ctx context.Context, ev string, n int) ([]json.RawMessage, error) {
	raw, err := r.rdb.LRange(ctx, recentKey(ev), 0, int64(n-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("lifecycle %s: recent: %w", ev, err)
	}
	out := make([]json.RawMessage, len(raw))
	for i, s := range raw {
		out[i] = json.RawMessage(s)
	}
	return out, nil
}

// Run observes every sale sales returns every interval until ctx is done.
// Sales that ended more than an hour ago are left alone. Errors go to
// onErr.
func (r *Recorder) Run(ctx context.Context, every time.Duration, sales func() []*admission.Sale, onErr func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, s := range sales() {
			if s.ServerTime.After(s.Config.EndsAt.Add(time.Hour)) {
				continue
			}
			octx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if err := r.Observe(octx, s); err != nil && ctx.Err() == nil && onErr != nil {
				onErr(err)
			}
			cancel()
		}
	}
}
