package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/redis/go-redis/v9"
)

func openTimes(shards int) Times {
	now := time.Now()
	return Times{Opens: now.Add(-time.Minute), WindowEnd: now.Add(time.Hour), JoinEnd: now.Add(2 * time.Hour), Shards: shards}
}

// TestJoinBatchConcurrent joins 300 users twice each from 600 goroutines
// at once (run it under -race): every user's two joins return the same
// entry, one of them new, and the sequence numbers are exactly 1..300. On
// a 3-master cluster with 16 join shards the pipelines are split by master
// (each of which has yet to load the script), and each shard numbers its
// own joiners from 1 without a gap.
func TestJoinBatchConcurrent(t *testing.T) {
	t.Run("redis", func(t *testing.T) { joinConcurrently(t, testenv.StartRedis(t).Client(t), 1) })
	t.Run("cluster", func(t *testing.T) { joinConcurrently(t, testenv.StartRedisCluster(t, 3).Client(t), 16) })
}

func joinConcurrently(t *testing.T, rdb Scripter, shards int) {
	const users = 300
	ctx := context.Background()
	j := NewJoiner(rdb)
	if j.batch == nil {
		t.Fatal("a client that pipelines should batch joins")
	}
	times := openTimes(shards)
	type result struct {
		e   Entry
		err error
	}
	res := make([][2]result, users)
	var wg sync.WaitGroup
	for i := range users {
		for k := range 2 {
			wg.Go(func() {
				e, err := j.Join(ctx, "conc", fmt.Sprint("user", i), times)
				res[i][k] = result{e, err}
			})
		}
	}
	wg.Wait()
	seen := make(map[[2]int64]bool)
	perShard := make(map[int]int64)
	for i, r := range res {
		a, b := r[0], r[1]
		if a.err != nil || b.err != nil {
			t.Fatalf("user%d: %v, %v", i, a.err, b.err)
		}
		same := a.e.Seq == b.e.Seq && a.e.Shard == b.e.Shard && a.e.Window == b.e.Window && a.e.JoinedAt.Equal(b.e.JoinedAt)
		if !same || a.e.Existing == b.e.Existing || a.e.Shard != ShardOf(fmt.Sprint("user", i), shards) {
			t.Fatalf("user%d: two joins gave %+v and %+v, want one entry on its shard, once new", i, a.e, b.e)
		}
		k := [2]int64{int64(a.e.Shard), a.e.Seq}
		if seen[k] || a.e.Seq < 1 {
			t.Fatalf("user%d: seq %d of shard %d repeated or below 1", i, a.e.Seq, a.e.Shard)
		}
		seen[k] = true
		perShard[a.e.Shard]++
	}
	for k := range seen {
		if k[1] > perShard[int(k[0])] {
			t.Fatalf("shard %d: seq %d beyond its %d joiners", k[0], k[1], perShard[int(k[0])])
		}
	}
	if j.batch.inflight != 0 || len(j.batch.queue) != 0 {
		t.Fatalf("batcher left %d in flight, %d queued", j.batch.inflight, len(j.batch.queue))
	}
}

// pausedJoiner returns a Joiner with one pipeline slot whose first join
// is held on the wire by CLIENT PAUSE WRITE, so that later joins queue
// behind it; release lets Redis run again and returns the first join's
// outcome. prepare, if not nil, runs on Redis before the pause.
func pausedJoiner(t *testing.T, prepare func(*redis.Client) error) (j *Joiner, rdb *redis.Client, release func() (Entry, error)) {
	t.Helper()
	ctx := context.Background()
	rdb = testenv.StartRedis(t).Client(t)
	j = NewJoiner(rdb)
	j.batch.slots = 1
	if _, err := j.Join(ctx, "warm", "x", openTimes(1)); err != nil { // loads join.lua
		t.Fatal(err)
	}
	if prepare != nil {
		if err := prepare(rdb); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", 30000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Do(context.Background(), "CLIENT", "UNPAUSE") })
	type result struct {
		e   Entry
		err error
	}
	first := make(chan result, 1)
	go func() {
		e, err := j.Join(ctx, "ev", "leader", openTimes(1))
		first <- result{e, err}
	}()
	waitQueued(t, j, 0, 1)
	return j, rdb, func() (Entry, error) {
		if err := rdb.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
			t.Fatal(err)
		}
		r := <-first
		return r.e, r.err
	}
}

// waitQueued polls until the batcher has inflight pipelines and queued
// joins.
func waitQueued(t *testing.T, j *Joiner, queued, inflight int) {
	t.Helper()
	for range 10000 {
		j.batch.mu.Lock()
		q, f := len(j.batch.queue), j.batch.inflight
		j.batch.mu.Unlock()
		if q == queued && f == inflight {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("batcher never had %d queued and %d in flight", queued, inflight)
}

// joinAsync joins user in the background and returns where its outcome
// goes.
func joinAsync(ctx context.Context, j *Joiner, ev, user string, times Times) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := j.Join(ctx, ev, user, times)
		ch <- err
	}()
	return ch
}

// TestJoinBatchOneErrorFailsOnlyItsJoin queues four joins behind a held
// one, one of them to a user whose hash bucket is not a hash: that join
// fails with Redis's WRONGTYPE, the other three (one the same user twice,
// one on a sharded event whose script the server has forgotten, so the
// pipeline answers NOSCRIPT and the join loads it) succeed in the same
// batch.
func TestJoinBatchOneErrorFailsOnlyItsJoin(t *testing.T) {
	ctx := context.Background()
	const bad = "bad"
	j, _, release := pausedJoiner(t, func(rdb *redis.Client) error {
		if err := rdb.Set(ctx, userKey("ev", bad), "not a hash", 0).Err(); err != nil {
			return err
		}
		// Forget the join script: every call of the batch meets NOSCRIPT
		// and falls back to a join of its own, which loads it.
		return rdb.ScriptFlush(ctx).Err()
	})
	for _, u := range []string{"good", "again"} {
		if userKey("ev", u) == userKey("ev", bad) {
			t.Fatalf("%s shares the bad user's bucket: pick another name", u)
		}
	}
	times := openTimes(1)
	var outcomes []<-chan error
	for i, u := range []string{"good", bad, "again", "again"} {
		outcomes = append(outcomes, joinAsync(ctx, j, "ev", u, times))
		waitQueued(t, j, i+1, 1)
	}
	sharded := joinAsync(ctx, j, "sharded", "s", openTimes(4))
	waitQueued(t, j, 5, 1)
	if e, err := release(); err != nil || e.Seq != 1 {
		t.Fatalf("held join: %+v, %v", e, err)
	}
	for i, ch := range outcomes {
		err := <-ch
		if (i == 1) != (err != nil) {
			t.Errorf("join %d: %v", i, err)
		}
		if i == 1 && !redis.HasErrorPrefix(errors.Unwrap(err), "WRONGTYPE") {
			t.Errorf("bad join: %v, want WRONGTYPE", err)
		}
	}
	if err := <-sharded; err != nil {
		t.Errorf("sharded join after NOSCRIPT: %v", err)
	}
	e, err := j.Join(ctx, "ev", "again", times)
	if err != nil || !e.Existing || e.Seq != 3 {
		t.Fatalf("again: %+v, %v; want the existing seq 3 (leader 1, good 2)", e, err)
	}
}

// TestJoinBatchCancel cancels a join while it waits in the queue: it
// returns at once with its context's error and never reaches Redis, and
// the joins around it go on.
func TestJoinBatchCancel(t *testing.T) {
	ctx := context.Background()
	j, rdb, release := pausedJoiner(t, nil)
	times := openTimes(1)
	cctx, cancel := context.WithCancel(ctx)
	gone := joinAsync(cctx, j, "ev", "gone", times)
	waitQueued(t, j, 1, 1)
	stays := joinAsync(ctx, j, "ev", "stays", times)
	waitQueued(t, j, 2, 1)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled join: %v, want context.Canceled", err)
	}
	waitQueued(t, j, 1, 1)
	if _, err := release(); err != nil {
		t.Fatal(err)
	}
	if err := <-stays; err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.HExists(ctx, userKey("ev", "gone"), "gone").Result(); err != nil || n {
		t.Fatalf("the cancelled join reached Redis (%v, %v)", n, err)
	}
	if _, err := j.Join(cctx, "ev", "late", times); !errors.Is(err, context.Canceled) {
		t.Fatalf("join with a cancelled context: %v", err)
	}
	waitQueued(t, j, 0, 0)
}

// TestJoinBatchSharesScriptCall queues joins behind a held one, some of
// them later joiners of one join shard (its window has closed) and one a
// lane's: the joins of each queue share one join.lua call, so Redis runs
// two scripts for the nine queued joins (ten before they shared calls), and the outcome is what joins one
// at a time give: distinct seqs from 1, a repeated user's same entry, and
// one seconds-list entry for the second they all joined in.
func TestJoinBatchSharesScriptCall(t *testing.T) {
	ctx := context.Background()
	j, rdb, release := pausedJoiner(t, nil)
	calls := func() int64 {
		info, err := rdb.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
				n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
				return n
			}
		}
		return 0
	}
	// Eight later joiners of shard 0 of 2: the window has closed.
	later := openTimes(2)
	later.WindowEnd = time.Now().Add(-time.Second)
	var users []string
	for i := 0; len(users) < 7; i++ {
		if u := fmt.Sprint("s", i); ShardOf(u, 2) == 0 {
			users = append(users, u)
		}
	}
	users = append(users, users[0]) // the same user twice in one call
	type result struct {
		e   Entry
		err error
	}
	out := make([]chan result, len(users))
	for i, u := range users {
		out[i] = make(chan result, 1)
		go func() {
			e, err := j.Join(ctx, "sh", u, later)
			out[i] <- result{e, err}
		}()
		waitQueued(t, j, i+1, 1)
	}
	lane := openTimes(1)
	lane.Lane = 1
	laned := joinAsync(ctx, j, "sh", "vip", lane)
	waitQueued(t, j, len(users)+1, 1)
	before := calls()
	if _, err := release(); err != nil {
		t.Fatal(err)
	}
	if err := <-laned; err != nil {
		t.Fatal(err)
	}
	seqs := map[int64]string{}
	var first Entry
	for i, ch := range out {
		r := <-ch
		if r.err != nil || r.e.Shard != 0 || r.e.Window != 0 {
			t.Fatalf("%s: %+v, %v", users[i], r.e, r.err)
		}
		if i == 0 {
			first = r.e
		}
		if i == len(users)-1 {
			if !r.e.Existing || r.e.Seq != first.Seq || !r.e.JoinedAt.Equal(first.JoinedAt) {
				t.Fatalf("repeated join %+v, first %+v", r.e, first)
			}
			continue
		}
		if r.e.Existing || seqs[r.e.Seq] != "" || r.e.Seq < 1 || r.e.Seq > 7 || !r.e.JoinedAt.Equal(first.JoinedAt) {
			t.Fatalf("%s: %+v (seqs so far %v)", users[i], r.e, seqs)
		}
		seqs[r.e.Seq] = users[i]
	}
	// The held join runs on release too: 1 + one call per queue.
	if got := calls() - before; got != 3 {
		t.Fatalf("Redis ran %d join.lua calls after the release, want 3: the held join's, then one per queue", got)
	}
	secs, err := rdb.LRange(ctx, shardTag("sh", 0)+"sec", 0, -1).Result()
	if err != nil || len(secs) != 1 || !strings.HasSuffix(secs[0], ":1") {
		t.Fatalf("seconds list %q (%v), want one entry starting at seq 1", secs, err)
	}
}
