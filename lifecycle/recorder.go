package lifecycle

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/luascript"
	"github.com/anteroom/anteroom/queue"
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

	// pushed reports whether anyone of a sale subscribed to a push
	// notice (WithPush); nil: nobody.
	pushed func(ctx context.Context, ev string) (bool, error)

	mu      sync.Mutex
	cursors map[string]int64 // your_turn cursor per sale and queue from the last reply
}

// NewRecorder returns a Recorder on rdb that publishes to js (the stream
// must exist: EnsureStream).
func NewRecorder(rdb redis.UniversalClient, js jetstream.JetStream) *Recorder {
	return &Recorder{rdb: rdb, js: js, record: luascript.New(recordLua), queueing: luascript.New(queueingLua), cursors: map[string]int64{}}
}

// WithPush makes r record your_turn events also for sales where pushed
// reports a push subscription (package push), with or without a webhook
// asking for them. Call it before Run.
func (r *Recorder) WithPush(pushed func(ctx context.Context, ev string) (bool, error)) *Recorder {
	r.pushed = pushed
	return r
}

func stateKey(ev string) string  { return "ar:{" + ev + "}:lc" }
func outboxKey(ev string) string { return "ar:{" + ev + "}:lc:out" }
func recentKey(ev string) string { return "ar:{" + ev + "}:lc:recent" }

// whoKey is the hash of seq → user of sale ev: on the event's slot, or
// for a sharded queue (shard ≥ 0) on the join shard's, so joins stay
// spread over the shards' slots.
func whoKey(ev string, shard int) string {
	if shard < 0 {
		return "ar:{" + ev + "}:who"
	}
	return queue.ShardTag(ev, shard) + "who"
}

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
	qs := turns[0].(int)
	if len(res) != 1+qs {
		return fmt.Errorf("lifecycle %s: unexpected reply %v", cfg.ID, res)
	}
	r.mu.Lock()
	for lane := range qs { // the default lane, then lanes 1, 2, ...
		r.cursors[cfg.ID+"\x00"+cursorField(lane)] = res[1+lane]
	}
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

// turnQueue is one queue of a sale whose admitted positions get your_turn
// events: the default lane (lane 0, sharded when order is set) or a lane.
type turnQueue struct {
	lane     int
	admitted int64 // positions 1..admitted are admitted
	window   int64
	perm     queue.Permutation
	order    *queue.Order
	framed   bool // the view can map every admitted position to a place
}

// queues lists sale's queues: the default lane, then each lane.
func queues(sale *admission.Sale) []turnQueue {
	qs := make([]turnQueue, 0, 1+len(sale.Lanes))
	q := turnQueue{admitted: min(int64(sale.Frontier), sale.Joined), window: sale.Window, perm: sale.Perm, order: sale.Order}
	q.framed = sale.WindowFrozen && (sale.Window == 0 || sale.Perm.Size() == sale.Window)
	if sale.Config.JoinShards > 1 {
		q.framed = q.framed && sale.Order != nil && sale.Order.Window() >= 0
	}
	qs = append(qs, q)
	for i := range sale.Lanes {
		v := &sale.Lanes[i]
		qs = append(qs, turnQueue{lane: i + 1, admitted: min(int64(v.Frontier), v.Joined), window: v.Window, perm: v.Perm,
			framed: v.WindowFrozen && (v.Window == 0 || v.Perm.Size() == v.Window)})
	}
	return qs
}

// cursorField is the state hash field of a queue's your_turn cursor.
func cursorField(lane int) string {
	if lane == 0 {
		return "cursor"
	}
	return "cursor:" + strconv.Itoa(lane)
}

// turn is one admitted person's your_turn event: its number (the event
// id's last part: Laned(lane, position)) and data.
type turn struct {
	n     int64
	shard int // -1: the queue is not sharded
	data  turnData
}

// turnData is a your_turn event's data.
type turnData struct {
	// Position is the position within the person's queue (their lane's).
	Position int64 `json:"position"`
	// Seq is the ticket's sequence number: Laned(lane, n) for a lane
	// member, the shard's own for a sharded queue.
	Seq int64 `json:"seq"`
	// User is the person, when the node keeps who joined (a your_turn
	// webhook).
	User string `json:"user,omitempty"`
	// Lane is the lane's index (1, 2, ...; absent for the default lane).
	Lane int `json:"lane,omitempty"`
	// Shard is the join shard, for a sale with join_shards > 1.
	Shard *int `json:"shard,omitempty"`
}

// yourTurns returns the script's cursor arguments: the number of queues,
// then per queue the cursor field, the cursor this node last saw, the new
// one and the events of the positions admitted since. A sale that wants no
// your_turn events (no webhook asks for them, nobody subscribed to a push)
// moves the cursors without events, so a webhook added later notifies only
// people admitted after.
func (r *Recorder) yourTurns(ctx context.Context, sale *admission.Sale) ([]any, error) {
	ev := sale.Config.ID
	wants := sale.Config.WantsYourTurn()
	if !wants && r.pushed != nil {
		on, err := r.pushed(ctx, ev)
		if err != nil {
			return nil, fmt.Errorf("lifecycle %s: push: %w", ev, err)
		}
		wants = on
	}
	qs := queues(sale)
	out := []any{len(qs)}
	for _, q := range qs {
		field := cursorField(q.lane)
		r.mu.Lock()
		cur, known := r.cursors[ev+"\x00"+field]
		r.mu.Unlock()
		switch {
		case !known || !q.framed || q.admitted <= cur:
			out = append(out, field, -1, -1, 0)
			continue
		case !wants:
			out = append(out, field, cur, q.admitted, 0)
			continue
		}
		upto := min(q.admitted, cur+MaxYourTurnPerTick)
		turns, err := r.turns(ctx, ev, q, cur+1, upto)
		if err != nil {
			return nil, err
		}
		out = append(out, field, cur, upto, len(turns))
		for _, t := range turns {
			body, err := json.Marshal(t.data)
			if err != nil {
				return nil, fmt.Errorf("lifecycle %s: %w", ev, err)
			}
			out = append(out, strconv.FormatInt(t.n, 10), string(body))
		}
	}
	return out, nil
}

// turns maps q's positions from..upto to their places and users.
func (r *Recorder) turns(ctx context.Context, ev string, q turnQueue, from, upto int64) ([]turn, error) {
	out := make([]turn, 0, upto-from+1)
	for pos := from; pos <= upto; pos++ {
		t := turn{n: queue.Laned(q.lane, pos), shard: -1, data: turnData{Position: pos, Lane: q.lane}}
		switch {
		case q.order != nil:
			s, seq, ok := q.order.Locate(q.perm, pos)
			if !ok { // the frontier never passes the settled positions
				return nil, fmt.Errorf("lifecycle %s: position %d has no place yet", ev, pos)
			}
			t.shard, t.data.Seq, t.data.Shard = s, seq, &s
		case pos <= q.window:
			t.data.Seq = queue.Laned(q.lane, q.perm.Inverse(pos))
		default:
			t.data.Seq = queue.Laned(q.lane, pos)
		}
		out = append(out, t)
	}
	// Who holds each place: one HMGET per who hash, in one pipeline.
	byKey := map[string][]int{}
	for i, t := range out {
		k := whoKey(ev, t.shard)
		byKey[k] = append(byKey[k], i)
	}
	pipe := r.rdb.Pipeline()
	cmds := make(map[string]*redis.SliceCmd, len(byKey))
	for k, idx := range byKey {
		fields := make([]string, len(idx))
		for j, i := range idx {
			fields[j] = strconv.FormatInt(out[i].data.Seq, 10)
		}
		cmds[k] = pipe.HMGet(ctx, k, fields...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("lifecycle %s: who: %w", ev, err)
	}
	for k, idx := range byKey {
		users := cmds[k].Val()
		for j, i := range idx {
			if j < len(users) {
				out[i].data.User, _ = users[j].(string)
			}
		}
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
