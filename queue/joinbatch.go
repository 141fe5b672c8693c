package queue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Batching limits of a Joiner on a client that pipelines.
const (
	// joinBatchMax is the most joins one pipeline carries.
	joinBatchMax = 1024
	// joinGroupMax is the most joins one script call carries: Redis runs
	// a call atomically, so it bounds how long one call holds the server
	// (about 0.3 ms).
	joinGroupMax = 128
	// joinPipelines is how many pipelines may be in flight at once. One:
	// every join that arrives while it is on the wire goes in the next,
	// so batches are as large as the load makes them (with two in flight
	// under wrk, each join cost the node about 2 µs and Redis 0.5 µs more).
	joinPipelines = 1
	// joinBatchTimeout bounds a pipeline for a join whose context has no
	// deadline.
	joinBatchTimeout = 5 * time.Second
)

// joinBatcher coalesces concurrent joins into pipelines of script calls:
// up to joinPipelines pipelines run at once, and while they are all in
// flight new joins queue; when one returns, the first queued join leads
// the next pipeline, carrying up to joinBatchMax queued joins in one round
// trip (group commit). An idle Joiner adds no delay: a join that finds a
// free pipeline sends at once, alone. Within a pipeline the joins of one
// queue (one hash tag, the same schedule) share one join.lua call, which
// handles its users one after another exactly as separate calls would;
// so batching changes the number of round trips and script calls, never
// an outcome, and each join gets its own reply or error.
type joinBatcher struct {
	rdb    Scripter
	script *redis.Script
	pipe   func() redis.Pipeliner
	highs  *Highs

	mu       sync.Mutex
	queue    []*joinCall
	inflight int
	slots    int // joinPipelines; tests lower it
}

// joinGroup is what joins must have in common to share one join.lua call:
// the queue's hash tag and the schedule they are judged against.
type joinGroup struct {
	tag                       string
	sharded                   bool
	opens, windowEnd, joinEnd int64  // unix ms
	until                     int64  // unix ms, 0: no bound (Times.Until)
	lists                     string // Times.Lists' keys (Lists.groupKey)
}

// joinCall is one join and where its reply goes. A call is queued until a
// leader takes it into a batch; batch is set when the call must run that
// batch itself.
type joinCall struct {
	group    joinGroup
	user     string
	bucket   string    // the user's hash bucket
	lists    *Lists    // nil: no list check (group.lists is "")
	deadline time.Time // the caller's, zero for none

	done  chan struct{}
	taken bool
	batch []*joinCall
	reply joinReply
	err   error
}

// joinReply is join.lua's answer for one user.
type joinReply struct {
	code, seq, joined, window int64
}

// run sends c, batched with concurrent calls, and stores its reply or
// error in c; it returns an error only for a call that never ran. A call
// still queued when ctx ends leaves the queue and returns ctx's error; one
// already on the wire waits for its pipeline, which is bounded by the
// latest deadline of the pipeline's calls.
func (b *joinBatcher) run(ctx context.Context, c *joinCall) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.done = make(chan struct{})
	c.deadline, _ = ctx.Deadline()
	b.mu.Lock()
	if b.inflight < b.slots {
		b.inflight++
		c.taken, c.batch = true, []*joinCall{c}
		b.mu.Unlock()
		b.lead(ctx, c)
		return nil
	}
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	select {
	case <-c.done:
	case <-ctx.Done():
		b.mu.Lock()
		if !c.taken {
			b.remove(c)
			b.mu.Unlock()
			return ctx.Err()
		}
		b.mu.Unlock()
		<-c.done
	}
	if c.batch != nil {
		b.lead(ctx, c)
	}
	return nil
}

// remove drops the queued call c; b.mu is held.
func (b *joinBatcher) remove(c *joinCall) {
	for i, q := range b.queue {
		if q == c {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			return
		}
	}
}

// lead runs the leader's batch in one pipeline, hands each call its reply,
// and passes the pipeline slot on to the next queued call with the batch
// it is to run, if any.
func (b *joinBatcher) lead(ctx context.Context, leader *joinCall) {
	batch := leader.batch
	leader.batch = nil
	b.send(ctx, batch)
	for _, c := range batch {
		if c != leader {
			close(c.done)
		}
	}
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.inflight--
		b.mu.Unlock()
		return
	}
	n := min(len(b.queue), joinBatchMax)
	next := make([]*joinCall, n)
	copy(next, b.queue)
	b.queue = append(b.queue[:0], b.queue[n:]...)
	for _, c := range next {
		c.taken = true
	}
	next[0].batch = next
	b.mu.Unlock()
	close(next[0].done)
}

// send runs batch in one pipeline, one script call per group, and stores
// each call's reply. The pipeline serves every call in it, so it does not
// end with the leader's context but at the latest of its calls' deadlines.
func (b *joinBatcher) send(ctx context.Context, batch []*joinCall) {
	var dl time.Time
	for _, c := range batch {
		d := c.deadline
		if d.IsZero() {
			d = time.Now().Add(joinBatchTimeout)
		}
		if d.After(dl) {
			dl = d
		}
	}
	bctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), dl)
	defer cancel()
	groups := groupCalls(batch)
	if len(groups) == 1 {
		runGroup(bctx, b.rdb, b.script, b.highs, groups[0])
		return
	}
	pipe := b.pipe()
	cmds := make([]*redis.Cmd, len(groups))
	for i, g := range groups {
		keys, args := groupArgs(b.highs, g)
		cmds[i] = b.script.EvalSha(bctx, pipe, keys, args...)
	}
	_, _ = pipe.Exec(bctx) // errors are per command, below
	for i, g := range groups {
		if err := cmds[i].Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			// A server that has not seen the script yet (a restart, a
			// new master): Run loads it.
			runGroup(bctx, b.rdb, b.script, b.highs, g)
			continue
		}
		storeReplies(b.highs, cmds[i], g)
	}
}

// groupCalls splits batch into the groups that share a script call (at
// most joinGroupMax calls each), in the order of their first calls.
func groupCalls(batch []*joinCall) [][]*joinCall {
	var groups [][]*joinCall
next:
	for _, c := range batch {
		for i, g := range groups {
			if g[0].group == c.group && len(g) < joinGroupMax {
				groups[i] = append(g, c)
				continue next
			}
		}
		groups = append(groups, []*joinCall{c})
	}
	return groups
}

// runGroup joins the users of calls, which share a group, in one script
// call of its own and stores each call's reply.
func runGroup(ctx context.Context, rdb Scripter, script *redis.Script, hs *Highs, calls []*joinCall) {
	keys, args := groupArgs(hs, calls)
	storeReplies(hs, script.Run(ctx, rdb, keys, args...), calls)
}

// groupArgs returns join.lua's keys and arguments for calls, with the
// highest seq of their counter hs has seen.
func groupArgs(hs *Highs, calls []*joinCall) ([]string, []any) {
	g := calls[0].group
	sharded := 0
	if g.sharded {
		sharded = 1
	}
	var lists *Lists // shared by the group's calls (group.lists)
	if calls[0].lists != nil {
		lists = calls[0].lists
	}
	nb, ne := 0, 0
	if lists != nil {
		nb, ne = len(lists.Block), len(lists.Eligible)
	}
	keys := append(queueKeys(g.tag, 1+nb+ne+len(calls)), fenceKey(g.tag))
	if lists != nil {
		keys = append(append(keys, lists.Block...), lists.Eligible...)
	}
	args := make([]any, 9, 9+2*len(calls))
	args[0], args[1], args[2], args[3], args[4] = g.opens, g.windowEnd, g.joinEnd, sharded, g.until
	args[5], args[6], args[7], args[8] = hs.High(g.tag), FailoverSpan.Milliseconds(), nb, ne
	for _, c := range calls {
		keys = append(keys, c.bucket)
		args = append(args, c.user)
		if lists != nil {
			args = append(args, c.lists.Hash)
		}
	}
	return keys, args
}

// storeReplies hands each of calls its four entries of cmd's reply, or
// cmd's error, and records the highest seq given in hs before any call
// returns its ticket.
func storeReplies(hs *Highs, cmd *redis.Cmd, calls []*joinCall) {
	res, err := cmd.Slice()
	if err == nil && len(res) != 4*len(calls) {
		err = fmt.Errorf("join.lua answered %d values for %d users", len(res), len(calls))
	}
	for i, c := range calls {
		if err != nil {
			c.err = err
			continue
		}
		c.reply, c.err = parseReply(res[4*i : 4*i+4])
		if c.err == nil && (c.reply.code == 0 || c.reply.code == 1) {
			hs.See(c.group.tag, c.reply.seq)
		}
	}
}

// parseReply reads one user's {code, seq, joined_s, W}.
func parseReply(v []any) (joinReply, error) {
	var r joinReply
	code, ok := v[0].(int64)
	if ok && code == -1 {
		msg, _ := v[1].(string)
		return r, scriptError(msg)
	}
	out := [4]*int64{&r.code, &r.seq, &r.joined, &r.window}
	for i, x := range v {
		n, ok := x.(int64)
		if !ok {
			return r, fmt.Errorf("join.lua: unexpected reply %v", v)
		}
		*out[i] = n
	}
	return r, nil
}

// scriptError is an error Redis raised for one user inside join.lua, such
// as WRONGTYPE; like go-redis's own errors it is a redis.Error.
type scriptError string

func (e scriptError) Error() string { return string(e) }

// RedisError marks e as an error Redis answered (see redis.HasErrorPrefix).
func (scriptError) RedisError() {}
