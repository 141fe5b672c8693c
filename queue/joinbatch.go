package queue

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Batching limits of a Joiner on a client that pipelines.
const (
	// joinBatchMax is the most joins one pipeline carries.
	joinBatchMax = 128
	// joinPipelines is how many pipelines may be in flight at once: one
	// can be on the wire while the node reads another's answers.
	joinPipelines = 2
	// joinBatchTimeout bounds a pipeline for a join whose context has no
	// deadline.
	joinBatchTimeout = 5 * time.Second
)

// joinBatcher coalesces concurrent joins into pipelines of script calls:
// up to joinPipelines pipelines run at once, and while they are all in
// flight new joins queue; when one returns, the first queued join leads
// the next pipeline, carrying up to joinBatchMax queued joins in one round
// trip (group commit). An idle Joiner adds no delay: a join that finds a
// free pipeline sends at once, alone. Redis runs a pipeline's scripts one
// after another, each atomic, exactly as if each had been sent alone, so
// batching changes the number of round trips, never an outcome; each join
// gets its own script's reply or error.
type joinBatcher struct {
	rdb  Scripter
	pipe func() redis.Pipeliner

	mu       sync.Mutex
	queue    []*joinCall
	inflight int
	slots    int // joinPipelines; tests lower it
}

// joinCall is one join and where its reply goes. A call is queued until a
// leader takes it into a batch; batch is set when the call must run that
// batch itself.
type joinCall struct {
	script   *redis.Script
	keys     []string
	args     []any
	deadline time.Time // the caller's, zero for none

	done  chan struct{}
	taken bool
	batch []*joinCall
	res   []int64
	err   error
}

// run sends c, batched with concurrent calls, and returns its reply. A
// call still queued when ctx ends leaves the queue and returns ctx's
// error; one already on the wire waits for its pipeline, which is bounded
// by the latest deadline of the pipeline's calls.
func (b *joinBatcher) run(ctx context.Context, c *joinCall) ([]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.done = make(chan struct{})
	c.deadline, _ = ctx.Deadline()
	b.mu.Lock()
	if b.inflight < b.slots {
		b.inflight++
		c.taken, c.batch = true, []*joinCall{c}
		b.mu.Unlock()
		b.lead(ctx, c)
		return c.res, c.err
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
			return nil, ctx.Err()
		}
		b.mu.Unlock()
		<-c.done
	}
	if c.batch != nil {
		b.lead(ctx, c)
	}
	return c.res, c.err
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

// send runs batch's scripts in one pipeline and stores each call's reply.
// The pipeline serves every call in it, so it does not end with the
// leader's context but at the latest of its calls' deadlines.
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
	if len(batch) == 1 {
		c := batch[0]
		c.res, c.err = c.script.Run(bctx, b.rdb, c.keys, c.args...).Int64Slice()
		return
	}
	pipe := b.pipe()
	cmds := make([]*redis.Cmd, len(batch))
	for i, c := range batch {
		cmds[i] = c.script.EvalSha(bctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(bctx) // errors are per command, below
	for i, c := range batch {
		c.res, c.err = cmds[i].Int64Slice()
		if c.err != nil && redis.HasErrorPrefix(c.err, "NOSCRIPT") {
			// A server that has not seen the script yet (a restart, a
			// new master): Run loads it.
			c.res, c.err = c.script.Run(bctx, b.rdb, c.keys, c.args...).Int64Slice()
		}
	}
}
