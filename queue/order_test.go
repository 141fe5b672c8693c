package queue_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
)

// TestShardedJoinOrder joins people to a queue of 16 join shards on a
// 3-master Redis Cluster, inside the window and over several later seconds,
// and checks that a repeated join returns the same entry, that positions
// are a bijection onto 1..N with the window first, that the window is
// π(offset(s) + seq), and that later joiners keep their seconds' order.
func TestShardedJoinOrder(t *testing.T) {
	const shards, inWindow, perSecond, seconds = 16, 60, 30, 3
	ctx := context.Background()
	rdb := testenv.StartRedisCluster(t, 3).Client(t)
	j := queue.NewJoiner(rdb)
	now := time.Now()
	times := queue.Times{Opens: now.Add(-time.Minute), WindowEnd: now.Add(500 * time.Millisecond), JoinEnd: now.Add(time.Hour), Shards: shards}
	entries := map[string]queue.Entry{}
	join := func(user string) {
		e, err := j.Join(ctx, "big", user, times)
		if err != nil {
			t.Fatal(err)
		}
		if e.Existing || e.Shard != queue.ShardOf(user, shards) {
			t.Fatalf("%s: %+v", user, e)
		}
		entries[user] = e
	}
	for i := range inWindow {
		join(fmt.Sprint("w", i))
	}
	// Later joiners in distinct seconds of shard 0's Redis TIME.
	last := int64(-1)
	for sec := range seconds {
		for i := 0; ; i++ {
			r, err := j.ReadShard(ctx, "big", 0, times.WindowEnd, time.Time{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Now.Before(times.WindowEnd) && r.Now.Unix() > last {
				last = r.Now.Unix()
				break
			}
			if i > 1000 {
				t.Fatal("Redis TIME does not move")
			}
			time.Sleep(10 * time.Millisecond)
		}
		for i := range perSecond {
			join(fmt.Sprintf("l%d-%d", sec, i))
		}
	}
	for user, want := range entries {
		e, err := j.Join(ctx, "big", user, times)
		if err != nil {
			t.Fatal(err)
		}
		if !e.Existing || e.Seq != want.Seq || e.Shard != want.Shard || !e.JoinedAt.Equal(want.JoinedAt) {
			t.Fatalf("%s joined again: %+v, first %+v", user, e, want)
		}
	}

	total := int64(len(entries))
	o := queue.NewOrder(shards, times.Opens)
	for i := 0; o.Settled() < total; i++ {
		if i > 1000 {
			t.Fatalf("settled %d of %d", o.Settled(), total)
		}
		reads := make([]queue.ShardRead, shards)
		for s := range reads {
			r, err := j.ReadShard(ctx, "big", s, times.WindowEnd, time.Time{}, o.ReadFrom(s))
			if err != nil {
				t.Fatal(err)
			}
			reads[s] = r
		}
		if o = o.Next(reads); o.Settled() < total {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if o.Window() != inWindow || o.Joined() != total {
		t.Fatalf("W %d joined %d, want %d and %d", o.Window(), o.Joined(), inWindow, total)
	}
	perm, err := queue.NewPermutation(make([]byte, 32), o.Window())
	if err != nil {
		t.Fatal(err)
	}
	ws := o.Windows()
	seen := map[int64]string{}
	for user, e := range entries {
		pos := o.Position(perm, queue.Place{Shard: e.Shard, Seq: e.Seq, Joined: e.JoinedAt})
		if prev, dup := seen[pos]; dup || pos < 1 || pos > total {
			t.Fatalf("%s has position %d (also %q)", user, pos, prev)
		}
		seen[pos] = user
		window := user[0] == 'w'
		if window != (pos <= inWindow) {
			t.Fatalf("%s (%+v) has position %d with W = %d", user, e, pos, inWindow)
		}
		if window {
			var off int64
			for _, w := range ws[:e.Shard] {
				off += w
			}
			if want := perm.Apply(off + e.Seq); pos != want {
				t.Fatalf("%s: position %d, want π(%d) = %d", user, pos, off+e.Seq, want)
			}
		}
	}
	for a, ea := range entries {
		for b, eb := range entries {
			if a[0] == 'w' || b[0] == 'w' {
				continue
			}
			pa := o.Position(perm, queue.Place{Shard: ea.Shard, Seq: ea.Seq, Joined: ea.JoinedAt})
			pb := o.Position(perm, queue.Place{Shard: eb.Shard, Seq: eb.Seq, Joined: eb.JoinedAt})
			earlier := ea.JoinedAt.Before(eb.JoinedAt) || ea.Shard == eb.Shard && ea.Seq < eb.Seq
			if earlier && pa > pb {
				t.Fatalf("%s (%+v, %d) is behind %s (%+v, %d)", a, ea, pa, b, eb, pb)
			}
		}
	}
}

// TestShardOf pins the shard function: FNV-1a-32 of the user's bytes mod S,
// as hash/fnv computes it, and 0 for S = 1.
func TestShardOf(t *testing.T) {
	for _, user := range []string{"", "a", "someone", "user-123456", "ünïcode"} {
		h := fnv.New32a()
		h.Write([]byte(user))
		for _, s := range []int{1, 2, 16, 256} {
			if got, want := queue.ShardOf(user, s), int(h.Sum32()%uint32(s)); got != want {
				t.Errorf("ShardOf(%q, %d) = %d, want %d", user, s, got, want)
			}
		}
	}
	if got := queue.ShardOf("x", 1); got != 0 {
		t.Errorf("ShardOf with S = 1 is %d", got)
	}
}

// TestOrderRoundRobin pins the later joiners' order from shard reads alone:
// whole seconds in order, within a second the shards taking turns, and a
// second with a shard whose Redis TIME has not passed it stays unsettled.
func TestOrderRoundRobin(t *testing.T) {
	opens := time.Unix(1_000_000, 0)
	at := func(s float64) time.Time { return opens.Add(time.Duration(s * float64(time.Second))) }
	o := queue.NewOrder(3, opens).Next([]queue.ShardRead{
		// Shard 0: window of 2, then seqs 3-5 in second 7 and 6 in second 8.
		{Now: at(9.5), Joined: 6, Window: 2, Starts: []queue.SecondStart{{Second: 7, First: 3}, {Second: 8, First: 6}}},
		// Shard 1: window of 0, then seq 1 in second 7.
		{Now: at(8.2), Joined: 1, Window: 0, Starts: []queue.SecondStart{{Second: 7, First: 1}}},
		// Shard 2: window of 1, then seqs 2-3 in second 7.
		{Now: at(9.1), Joined: 3, Window: 1, Starts: []queue.SecondStart{{Second: 7, First: 2}}},
	})
	if o.Window() != 3 || o.Settled() != 3+6 || o.Joined() != 10 {
		t.Fatalf("W %d settled %d joined %d, want 3, 9 (second 8 waits for shard 1) and 10", o.Window(), o.Settled(), o.Joined())
	}
	perm, err := queue.NewPermutation(make([]byte, 32), 3)
	if err != nil {
		t.Fatal(err)
	}
	pos := func(shard int, seq int64, sec float64) int64 {
		return o.Position(perm, queue.Place{Shard: shard, Seq: seq, Joined: at(sec)})
	}
	// Second 7: counts 3, 1, 2. Round 1: shards 0, 1, 2; round 2: 0, 2; round 3: 0.
	for _, c := range []struct {
		shard int
		seq   int64
		want  int64
	}{{0, 3, 4}, {1, 1, 5}, {2, 2, 6}, {0, 4, 7}, {2, 3, 8}, {0, 5, 9}} {
		if got := pos(c.shard, c.seq, 7); got != c.want {
			t.Errorf("shard %d seq %d: position %d, want %d", c.shard, c.seq, got, c.want)
		}
	}
	if got := pos(0, 6, 8); got != 0 {
		t.Errorf("second 8 before shard 1 passed it: position %d, want 0 (unsettled)", got)
	}
	if got := pos(2, 1, 3); got != perm.Apply(2+0+1) {
		t.Errorf("window member of shard 2: position %d, want π(3) = %d", got, perm.Apply(3))
	}
	// Shard 1 passes second 8 with nobody new: seq 6 of shard 0 is next.
	o = o.Next([]queue.ShardRead{{Now: at(9.6), Joined: 6, Window: 2}, {Now: at(9.0), Joined: 1, Window: 0}, {Now: at(9.7), Joined: 3, Window: 1}})
	if got := pos(0, 6, 8); got != 10 || o.Settled() != 10 {
		t.Errorf("after shard 1 passed second 8: position %d, settled %d, want 10 and 10", got, o.Settled())
	}
}

// TestShardSecondsNeverGoBack seeds a shard's seconds list with a second
// ahead of the server's clock (as if the clock had stepped back since):
// the next later joiner is counted in that second, so the list stays in
// order and the ticket's second matches it.
func TestShardSecondsNeverGoBack(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client(t)
	j := queue.NewJoiner(rdb)
	now := time.Now()
	times := queue.Times{Opens: now.Add(-time.Minute), WindowEnd: now.Add(-time.Second), JoinEnd: now.Add(time.Hour), Shards: 2}
	first, err := j.Join(ctx, "back", "someone", times)
	if err != nil {
		t.Fatal(err)
	}
	s := first.Shard
	ahead := time.Unix(times.Opens.Unix()+5000, 0)
	// Shard s's list says its latest later joiner came in second 5000.
	if err := rdb.RPush(ctx, fmt.Sprintf("ar:{back.%d}:sec", s), fmt.Sprintf("5000:%d", first.Seq)).Err(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		user := fmt.Sprint("other", i)
		if queue.ShardOf(user, 2) != s {
			continue
		}
		e, err := j.Join(ctx, "back", user, times)
		if err != nil {
			t.Fatal(err)
		}
		if !e.JoinedAt.Equal(ahead) {
			t.Fatalf("joined at %v, want the shard's latest second %v", e.JoinedAt, ahead)
		}
		r, err := j.ReadShard(ctx, "back", s, times.WindowEnd, time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if last := r.Starts[len(r.Starts)-1]; last.Second != 5000 || len(r.Starts) != 2 {
			t.Fatalf("seconds list %+v: want it to end with second 5000, no new entry", r.Starts)
		}
		again, err := j.Join(ctx, "back", user, times)
		if err != nil || !again.JoinedAt.Equal(ahead) || again.Seq != e.Seq {
			t.Fatalf("repeat join: %+v %v", again, err)
		}
		return
	}
}

// TestOrderLocateInvertsPosition: every settled position is located at the
// one place (shard, seq) whose Position it is, window members and later
// joiners of seconds with uneven shard counts alike; a position not
// settled yet is not located.
func TestOrderLocateInvertsPosition(t *testing.T) {
	opens := time.Unix(2_000_000, 0)
	at := func(s float64) time.Time { return opens.Add(time.Duration(s * float64(time.Second))) }
	rng := rand.New(rand.NewPCG(7, 11))
	const shards = 4
	reads := make([]queue.ShardRead, shards)
	second := map[[2]int64]int64{} // (shard, seq) -> second of a later joiner
	for s := range reads {
		w := int64(rng.IntN(5))
		r := queue.ShardRead{Now: at(30.5), Window: w, Joined: w}
		for sec := int64(10); sec < 20; sec++ {
			n := int64(rng.IntN(4))
			if n == 0 {
				continue
			}
			r.Starts = append(r.Starts, queue.SecondStart{Second: sec, First: r.Joined + 1})
			for range n {
				r.Joined++
				second[[2]int64{int64(s), r.Joined}] = sec
			}
		}
		reads[s] = r
	}
	o := queue.NewOrder(shards, opens).Next(reads)
	perm, err := queue.NewPermutation(make([]byte, 32), o.Window())
	if err != nil {
		t.Fatal(err)
	}
	if o.Settled() != o.Joined() || o.Settled() == o.Window() {
		t.Fatalf("settled %d joined %d window %d: want everyone settled and some later joiners", o.Settled(), o.Joined(), o.Window())
	}
	seen := map[[2]int64]bool{}
	for pos := int64(1); pos <= o.Settled(); pos++ {
		s, seq, ok := o.Locate(perm, pos)
		if !ok {
			t.Fatalf("position %d of %d not located", pos, o.Settled())
		}
		key := [2]int64{int64(s), seq}
		if seen[key] {
			t.Fatalf("position %d located at shard %d seq %d twice", pos, s, seq)
		}
		seen[key] = true
		joined := at(0)
		if sec, later := second[key]; later {
			joined = at(float64(sec))
		}
		if got := o.Position(perm, queue.Place{Shard: s, Seq: seq, Joined: joined}); got != pos {
			t.Errorf("position %d located at shard %d seq %d, whose position is %d", pos, s, seq, got)
		}
	}
	if _, _, ok := o.Locate(perm, o.Settled()+1); ok {
		t.Errorf("position %d past the settled ones located", o.Settled()+1)
	}
	if _, _, ok := queue.NewOrder(shards, opens).Locate(perm, 1); ok {
		t.Error("located a position before the window froze")
	}
}
