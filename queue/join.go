package queue

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/luascript"
)

// Join outcomes callers branch on.
var (
	ErrNotOpen = errors.New("queue: not open yet")
	ErrClosed  = errors.New("queue: joining has ended")
	// ErrStaleView: the instants a join or a shard read was judged
	// against come from a view of the sale read longer ago than
	// Times.Until allows; the script acted on nothing. Refresh the view.
	ErrStaleView = errors.New("queue: the view of the sale is stale")
	// ErrBlocked: the user is on one of Times.Lists.Block (join.lua's
	// exact check); nothing was written.
	ErrBlocked = errors.New("queue: blocked by a list")
	// ErrNotEligible: the user is on none of Times.Lists.Eligible;
	// nothing was written.
	ErrNotEligible = errors.New("queue: on no eligibility list")
)

// IsStaleView reports whether err is a script's refusal of a stale view
// (join.lua's code 4 is ErrStaleView itself; advance.lua and readshard.lua
// answer this error reply).
func IsStaleView(err error) bool {
	return errors.Is(err, ErrStaleView) || err != nil && strings.Contains(err.Error(), "anteroom: stale view")
}

//go:embed join.lua
var joinLua string

// userShards spreads an event's user entries over small hashes that Redis
// keeps in its compact listpack encoding (about 60 entries each at one
// million joiners), which is what keeps a waiting user under 100 bytes.
const userShards = 16384

// Entry is a user's place in an event's queue.
type Entry struct {
	// Seq is the sequence number; in a lane, Laned(lane, its number).
	Seq      int64
	JoinedAt time.Time // whole seconds
	// Window is the frozen window size W, or 0 while the window is open.
	Window int64
	// Existing is true when the user had joined before.
	Existing bool
	// Shard is the join shard the user's entry is on (0 when S = 1); Seq
	// and Window count within it.
	Shard int
}

// Scripter is the part of a Redis client the queue uses; *redis.Client and
// *redis.ClusterClient satisfy it.
type Scripter interface {
	redis.Scripter
}

// Joiner hands out sequence numbers: one script call per join. On a
// client that pipelines (*redis.Client, *redis.ClusterClient) concurrent
// joins share round trips (see joinBatcher); an idle Joiner sends each
// join at once. It is safe for concurrent use.
type Joiner struct {
	rdb   Scripter
	join  *redis.Script
	read  *redis.Script
	batch *joinBatcher // nil: one round trip per join
	highs *Highs
}

// NewJoiner returns a Joiner on rdb.
func NewJoiner(rdb Scripter) *Joiner {
	j := &Joiner{rdb: rdb, join: luascript.New(joinLua), read: luascript.New(readShardLua), highs: NewHighs()}
	if p, ok := rdb.(interface{ Pipeline() redis.Pipeliner }); ok {
		j.batch = &joinBatcher{rdb: rdb, script: j.join, pipe: p.Pipeline, slots: joinPipelines, highs: j.highs}
	}
	return j
}

// Times are the instants a join is judged against, all read from the
// event's configuration.
type Times struct {
	Opens, WindowEnd, JoinEnd time.Time
	// Shards is the event's join shard count S; 0 means 1.
	Shards int
	// Lane is the index of the lane joined (see lanes.go); 0 is the
	// default lane. A lane has one shard; its WindowEnd is the lane's
	// start.
	Lane int
	// Until, when set, is the Redis TIME until which these instants may be
	// acted on: the view of the configuration they come from was read
	// event.MaxViewAge before it. A join after it is refused with
	// ErrStaleView, before anything is read or written, so a view that a
	// staff save overtook never freezes a window at an end, or opens a
	// queue layout, that the store no longer has. Zero: no bound.
	Until time.Time
	// Lists are the door's exact list checks of this join (package door's
	// Verdict.Exact), decided inside the join's own script call; the
	// zero value checks none.
	Lists Lists
}

// Lists are the exact copies of lists (package door/lists' layout) a
// join checks its user against, in the join's own slot (JoinTag's; for a
// lane, the event's copies: lists.JoinCopyTag), and the
// user's entry: a user on a block list is refused with ErrBlocked, one on
// none of the eligibility lists (when there are some) with
// ErrNotEligible; nothing is written for them.
type Lists struct {
	// Block and Eligible are the copies' keys
	// (lists.CopyKey(lists.JoinCopyTag(…), list)); a key outside the
	// join's slot fails the join.
	Block, Eligible []string
	// Hash is the user's 8-byte keyed hash (lists.Arg).
	Hash string
}

// empty reports whether l checks nothing.
func (l *Lists) empty() bool { return len(l.Block) == 0 && len(l.Eligible) == 0 }

// groupKey is l's keys as one comparable string: the joins of one script
// call share their lists.
func (l *Lists) groupKey() string {
	if l.empty() {
		return ""
	}
	return strconv.Itoa(len(l.Block)) + "\x00" + strings.Join(l.Block, "\x00") + "\x00" + strings.Join(l.Eligible, "\x00")
}

// JoinTag is the hash tag of the queue that user's join to event ev at t
// goes to: the lane's, or with join shards the user's shard's. The exact
// copies a join checks (Times.Lists) are in its slot
// (lists.JoinCopyTag).
func JoinTag(ev, user string, t Times) string {
	if t.Lane == 0 && t.Shards > 1 {
		return shardTag(ev, ShardOf(user, t.Shards))
	}
	return LaneTag(ev, t.Lane)
}

// Join gives user a sequence number in event ev, or returns the one they
// already have. Redis TIME decides, so nodes with skewed clocks agree. It
// returns ErrNotOpen before the queue opens and ErrClosed after joining ends
// or, with shards, more than MaxShardedSpan after the opening (a user who
// joined earlier still gets their entry back).
//
// With S > 1 shards the user's entry is on shard ShardOf(user, S), so a
// repeated join finds it there; Seq and Window are the shard's own.
func (j *Joiner) Join(ctx context.Context, ev, user string, t Times) (Entry, error) {
	shard, tag := 0, LaneTag(ev, t.Lane)
	sharded := t.Lane == 0 && t.Shards > 1 // a lane has one shard
	if sharded {
		shard = ShardOf(user, t.Shards)
		tag = shardTag(ev, shard)
	}
	c := &joinCall{
		group: joinGroup{
			tag: tag, sharded: sharded,
			opens: t.Opens.UnixMilli(), windowEnd: t.WindowEnd.UnixMilli(), joinEnd: t.JoinEnd.UnixMilli(),
			until: untilMillis(t.Until), lists: t.Lists.groupKey(),
		},
		user: user, bucket: userKeyIn(tag, user),
	}
	if !t.Lists.empty() {
		if err := t.Lists.Check(tag); err != nil {
			return Entry{}, fmt.Errorf("join %s: %w", ev, err)
		}
		c.lists = &t.Lists
	}
	var err error
	if j.batch != nil {
		err = j.batch.run(ctx, c)
	} else {
		runGroup(ctx, j.rdb, j.join, j.highs, []*joinCall{c})
	}
	if err == nil {
		err = c.err
	}
	if err != nil {
		return Entry{}, fmt.Errorf("join %s: %w", ev, err)
	}
	r := c.reply
	switch r.code {
	case 2:
		return Entry{}, ErrNotOpen
	case 3:
		return Entry{}, ErrClosed
	case 4:
		return Entry{}, fmt.Errorf("join %s: %w", ev, ErrStaleView)
	case 5:
		return Entry{}, ErrBlocked
	case 6:
		return Entry{}, ErrNotEligible
	}
	return Entry{Seq: Laned(t.Lane, r.seq), JoinedAt: time.Unix(r.joined, 0), Window: max(r.window, 0), Existing: r.code == 1, Shard: shard}, nil
}

// untilMillis is t in unix ms, 0 for the zero time (no bound).
func untilMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.UnixMilli(), 1)
}

func userKey(ev, user string) string { return userKeyIn("ar:{"+ev+"}:", user) }

// userKeyIn names the user hash bucket of user under key prefix tag.
func userKeyIn(tag, user string) string {
	return tag + "u:" + strconv.FormatUint(uint64(userHash(user)%userShards), 10)
}

// UserHash is the hash that places user in a join shard (ShardOf: it
// modulo the shards), for a package that splits what it keeps of a user
// over a sale's shards (door/lists' copies). Not a secret.
func UserHash(user string) uint32 { return userHash(user) }

// userHash is the 32-bit FNV-1a hash of user's bytes (as hash/fnv's
// New32a computes it, without allocating: status calls it per poll).
func userHash(user string) uint32 {
	h := uint32(2166136261)
	for i := range len(user) {
		h ^= uint32(user[i])
		h *= 16777619
	}
	return h
}

// Keys names the keys the admission frontier shares with the queue, so the
// frontier script can read the count of joiners and freeze W in one slot;
// Fence is the counter's failover fence, for a script that gives seqs or
// freezes W from the counter (admission's enter.lua and advance.lua).
type Keys struct{ Seq, Window, Fence string }

// KeysFor returns the queue keys of event ev.
func KeysFor(ev string) Keys { return KeysForLane(ev, 0) }

// UserKey names the hash that holds user's entry in event ev's queue (on
// one slot, JoinShards = 1), packed as join.lua packs it, for scripts of
// other packages that keep entries the same way (admission's enter.lua).
func UserKey(ev, user string) string { return userKey(ev, user) }

// Check refuses lists a script call on keys under tag cannot check: a
// copy in another slot (another hash tag: a lane's joins read the
// event's copies, in the same slot under another prefix), or a hash that
// is not 8 bytes. Join checks its own; a safety-net room's entrance
// (package admission) checks its lists with it.
func (l *Lists) Check(tag string) error {
	if len(l.Hash) != 8 {
		return fmt.Errorf("queue: a list check needs the user's 8-byte hash, got %d bytes", len(l.Hash))
	}
	for _, keys := range [2][]string{l.Block, l.Eligible} {
		for _, k := range keys {
			if hashTag(k) != hashTag(tag) {
				return fmt.Errorf("queue: list copy %q is not in the slot of the join's tag %q", k, tag)
			}
		}
	}
	return nil
}

// hashTag is key's Redis Cluster hash tag: what lies between its first
// '{' and the next '}' when that is not empty, else the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}
