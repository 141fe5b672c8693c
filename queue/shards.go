package queue

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"
)

//go:embed readshard.lua
var readShardLua string

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
// (frozen here once Redis TIME reaches windowEnd) and its seconds list from
// index from on.
func (j *Joiner) ReadShard(ctx context.Context, ev string, s int, windowEnd time.Time, from int) (ShardRead, error) {
	tag := shardTag(ev, s)
	keys := []string{tag + "seq", tag + "w", tag + "sec"}
	res, err := j.read.Run(ctx, j.rdb, keys, windowEnd.UnixMilli(), from).Int64Slice()
	if err != nil {
		return ShardRead{}, fmt.Errorf("read shard %d of %s: %w", s, ev, err)
	}
	if len(res) < 3 || len(res)%2 != 1 {
		return ShardRead{}, fmt.Errorf("read shard %d of %s: unexpected reply of %d values", s, ev, len(res))
	}
	r := ShardRead{Now: time.UnixMilli(res[0]), Joined: res[1], Window: res[2]}
	for i := 3; i < len(res); i += 2 {
		r.Starts = append(r.Starts, SecondStart{Second: res[i], First: res[i+1]})
	}
	return r, nil
}
