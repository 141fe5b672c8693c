package lifecycle

import (
	"context"
	"fmt"

	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

// joiner is the queue's join.
type joiner interface {
	Join(ctx context.Context, ev, user string, t queue.Times) (queue.Entry, error)
}

// Joiner wraps a queue joiner: for sales with a your_turn webhook it also
// stores who holds the sequence number (one HSET, about 50 bytes a joiner;
// on the join shard's slot for a sharded queue),
// so your_turn events can name the user. Safe for concurrent use.
type Joiner struct {
	next  joiner
	rdb   redis.UniversalClient
	wants func(ev string) bool
}

// NewJoiner wraps next; wants reports whether sale ev has a your_turn
// webhook.
func NewJoiner(next joiner, rdb redis.UniversalClient, wants func(ev string) bool) *Joiner {
	return &Joiner{next: next, rdb: rdb, wants: wants}
}

// Join joins as next does, then records seq → user when the sale wants
// your_turn events. A join repeated records again, so a record lost to an
// error is repaired by the user's next join.
func (j *Joiner) Join(ctx context.Context, ev, user string, t queue.Times) (queue.Entry, error) {
	e, err := j.next.Join(ctx, ev, user, t)
	if err != nil || !j.wants(ev) {
		return e, err
	}
	shard := -1
	if t.Lane == 0 && t.Shards > 1 {
		shard = e.Shard
	}
	if err := j.rdb.HSet(ctx, whoKey(ev, shard), e.Seq, user).Err(); err != nil {
		return queue.Entry{}, fmt.Errorf("lifecycle %s: who: %w", ev, err)
	}
	return e, nil
}
