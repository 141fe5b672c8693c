package queue

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed readshard.lua
var readShardLua string

// MaxShardedSpan is the longest a queue of join shards takes joins after it
// opens: a shard's user entry holds the arrival second (which orders its
// later joiners) up to 2^22 − 1. A shard refuses a join past it
// (ErrClosed), never handing out a ticket no position follows; an event's
// validation keeps its joining within it (event.MaxShardedSpan).
const MaxShardedSpan = (1<<22 - 1) * time.Second

// ShardOf returns the join shard of user in a queue of S shards:
// FNV-1a-32(user bytes) mod S, 0 when S <= 1. Anyone holding a ticket can
// recompute it from the ticket's user.
func ShardOf(user string, shards int) int {
	if shards <= 1 {
		return 0
	}
	return int(userHash(user) % uint32(shards))
}

// shardTag is the key prefix of join shard s of event ev. Its hash tag
// "{ev.s}" puts every shard on its own Redis Cluster slot; '.' never
// appears in an event ID, so no two events' shards share a tag.
func shardTag(ev string, s int) string {
	return "ar:{" + ev + "." + strconv.Itoa(s) + "}:"
}

// ShardRead is one read of one join shard (see Reader).
type ShardRead struct {
	// Now is the shard's Redis TIME at the read.
	Now time.Time
	// Joined is how many people joined the shard.
	Joined int64
	// Window is the shard's frozen window size W_s, or -1 while open.
	Window int64
	// Starts are the seconds list entries from the requested index on.
	Starts []SecondStart
}

// SecondStart says that the later joiners of the shard in second Second
// (counted from the queue's opening, from the shard's Redis TIME) begin at
// the shard's sequence number First.
type SecondStart struct{ Second, First int64 }

// ReadShard reads join shard s of event ev: its counter, its window size
// (frozen here once Redis TIME reaches windowEnd, from the counter fenced
// as a join fences it: see the package doc, "What a Redis failover does")
// and its seconds list from index from on. until bounds the view windowEnd comes from as Times.Until
// does a join's (ErrStaleView after it; zero: no bound).
func (j *Joiner) ReadShard(ctx context.Context, ev string, s int, windowEnd, until time.Time, from int) (ShardRead, error) {
	res, err := j.read.Run(ctx, j.rdb, shardReadKeys(ev, s), j.shardReadArgs(ev, s, windowEnd, until, from)...).Int64Slice()
	if IsStaleView(err) {
		return ShardRead{}, fmt.Errorf("read shard %d of %s: %w", s, ev, ErrStaleView)
	}
	if err != nil {
		return ShardRead{}, fmt.Errorf("read shard %d of %s: %w", s, ev, err)
	}
	return parseShardRead(ev, s, res)
}

// ReadShards reads every shard of event ev, shard s from list index
// from[s], in one pipeline when the client has one (a cluster client sends
// each master its part at once), else one shard after another.
func (j *Joiner) ReadShards(ctx context.Context, ev string, windowEnd, until time.Time, from []int) ([]ShardRead, error) {
	out := make([]ShardRead, len(from))
	if p, ok := j.rdb.(interface{ Pipeline() redis.Pipeliner }); ok {
		pipe := p.Pipeline()
		cmds := make([]*redis.Cmd, len(from))
		for s := range from {
			cmds[s] = j.read.EvalSha(ctx, pipe, shardReadKeys(ev, s), j.shardReadArgs(ev, s, windowEnd, until, from[s])...)
		}
		_, _ = pipe.Exec(ctx) // errors are per command, below
		for s, c := range cmds {
			res, err := c.Int64Slice()
			if err != nil {
				// NOSCRIPT on a master that has not seen the script yet, or
				// a redirect: one shard at a time, loading as needed.
				return j.readEach(ctx, ev, windowEnd, until, from)
			}
			if out[s], err = parseShardRead(ev, s, res); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return j.readEach(ctx, ev, windowEnd, until, from)
}

func (j *Joiner) readEach(ctx context.Context, ev string, windowEnd, until time.Time, from []int) ([]ShardRead, error) {
	out := make([]ShardRead, len(from))
	for s := range from {
		r, err := j.ReadShard(ctx, ev, s, windowEnd, until, from[s])
		if err != nil {
			return nil, err
		}
		out[s] = r
	}
	return out, nil
}

// shardReadKeys names readshard.lua's keys for shard s of event ev: the
// shard's counter, window and seconds list, and the counter's fence.
func shardReadKeys(ev string, s int) []string {
	tag := shardTag(ev, s)
	return append(queueKeys(tag, 1), fenceKey(tag))
}

// shardReadArgs are readshard.lua's arguments: with the highest seq of the
// shard's counter this Joiner has seen and the failover span, so the read
// fences the counter as a join would before it freezes W_s.
func (j *Joiner) shardReadArgs(ev string, s int, windowEnd, until time.Time, from int) []any {
	return []any{windowEnd.UnixMilli(), from, untilMillis(until), j.highs.High(shardTag(ev, s)), FailoverSpan.Milliseconds()}
}

// queueKeys names the sequence counter, frozen window and seconds list of
// the queue under key prefix tag (join.lua's and readshard.lua's first
// keys), with room for n more.
func queueKeys(tag string, n int) []string {
	return append(make([]string, 0, 3+n), tag+"seq", tag+"w", tag+"sec")
}

func parseShardRead(ev string, s int, res []int64) (ShardRead, error) {
	if len(res) < 3 || len(res)%2 != 1 {
		return ShardRead{}, fmt.Errorf("read shard %d of %s: unexpected reply of %d values", s, ev, len(res))
	}
	r := ShardRead{Now: time.UnixMilli(res[0]), Joined: res[1], Window: res[2]}
	for i := 3; i < len(res); i += 2 {
		r.Starts = append(r.Starts, SecondStart{Second: res[i], First: res[i+1]})
	}
	return r, nil
}
