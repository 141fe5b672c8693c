package queue

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// The join's exact list check (join.lua's list keys). The copies are
// written here in package door/lists' layout (its doc.go) by writeCopy:
// queue cannot import door/lists (which builds on queue's tags), so the
// tests lay the bytes themselves, as the lists' Store lays them.

// listArg is h's 8-byte big-endian form (door/lists.Arg).
func listArg(h uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], h)
	return string(b[:])
}

// copyKey is list's copy under tag (door/lists.CopyKey).
func copyKey(tag, list string) string { return tag + "list:" + list }

// writeCopy lays entries as list's exact copy under tag: field the first
// two bytes of an entry, value the other six bytes of every entry of that
// field, ascending.
func writeCopy(t *testing.T, rdb redis.Cmdable, tag, list string, entries ...uint64) {
	t.Helper()
	slices.Sort(entries)
	fields := map[string][]byte{}
	for _, h := range entries {
		a := listArg(h)
		fields[a[:2]] = append(fields[a[:2]], a[2:]...)
	}
	for f, v := range fields {
		if err := rdb.HSet(context.Background(), copyKey(tag, list), f, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// Hashes of the tests' users: two share their first two bytes, so the
// copy's binary search has more than one entry to look through.
const (
	hMallory = 0x1234_0000_0000_0007
	hTrudy   = 0x1234_0000_0000_0003
	hAlice   = 0x1234_0000_0000_0005 // same field as the listed, not on
	hBob     = 0x9999_0000_0000_0001
)

// TestJoinListsBatch runs one script call of four users checked against
// one block list and one eligibility list: the blocked user (code 5) and
// the one on no eligibility list (code 6) are refused with nothing
// written and no seq taken; the other two get seqs 1 and 2.
func TestJoinListsBatch(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client(t)
	j := NewJoiner(rdb)
	tag := LaneTag("ev", 0)
	writeCopy(t, rdb, tag, "bad", hMallory, hTrudy)
	writeCopy(t, rdb, tag, "vip", hAlice, hMallory, 0x0001_0000_0000_0000)
	times := openTimes(1)
	block, elig := []string{copyKey(tag, "bad")}, []string{copyKey(tag, "vip")}
	users := []struct {
		name string
		hash uint64
		want int64
	}{{"mallory", hMallory, 5}, {"alice", hAlice, 0}, {"bob", hBob, 6}, {"alice2", hAlice, 0}}
	var calls []*joinCall
	for _, u := range users {
		l := Lists{Block: block, Eligible: elig, Hash: listArg(u.hash)}
		calls = append(calls, &joinCall{
			group: joinGroup{tag: tag, opens: times.Opens.UnixMilli(), windowEnd: times.WindowEnd.UnixMilli(), joinEnd: times.JoinEnd.UnixMilli(), lists: l.groupKey()},
			user:  u.name, bucket: userKeyIn(tag, u.name), lists: &l,
		})
	}
	runGroup(ctx, rdb, j.join, j.highs, calls)
	var seqs []int64
	for i, c := range calls {
		if c.err != nil {
			t.Fatalf("%s: %v", users[i].name, c.err)
		}
		if c.reply.code != users[i].want {
			t.Fatalf("%s: code %d, want %d", users[i].name, c.reply.code, users[i].want)
		}
		if c.reply.code == 0 {
			seqs = append(seqs, c.reply.seq)
		}
	}
	if !slices.Equal(seqs, []int64{1, 2}) {
		t.Fatalf("seqs %v, want [1 2]: a refused user took none", seqs)
	}
	for _, u := range []string{"mallory", "bob"} {
		if n, err := rdb.HExists(ctx, userKeyIn(tag, u), u).Result(); err != nil || n {
			t.Fatalf("%s: an entry was written (%v, %v)", u, n, err)
		}
	}
	// Through Join: the sentinels.
	_, err := j.Join(ctx, "ev", "mallory", Times{Opens: times.Opens, WindowEnd: times.WindowEnd, JoinEnd: times.JoinEnd, Lists: Lists{Block: block, Hash: listArg(hMallory)}})
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("blocked join: %v, want ErrBlocked", err)
	}
	_, err = j.Join(ctx, "ev", "bob", Times{Opens: times.Opens, WindowEnd: times.WindowEnd, JoinEnd: times.JoinEnd, Lists: Lists{Eligible: elig, Hash: listArg(hBob)}})
	if !errors.Is(err, ErrNotEligible) {
		t.Fatalf("ineligible join: %v, want ErrNotEligible", err)
	}
	// A user who joined and is listed later is refused at the next join
	// (the door's check precedes the entry's).
	writeCopy(t, rdb, tag, "bad", hAlice)
	_, err = j.Join(ctx, "ev", "alice", Times{Opens: times.Opens, WindowEnd: times.WindowEnd, JoinEnd: times.JoinEnd, Lists: Lists{Block: block, Hash: listArg(hAlice)}})
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("a joined user listed later: %v, want ErrBlocked", err)
	}
	// An eligibility list without a copy in the slot lets nobody in.
	_, err = j.Join(ctx, "ev", "carol", Times{Opens: times.Opens, WindowEnd: times.WindowEnd, JoinEnd: times.JoinEnd, Lists: Lists{Eligible: []string{copyKey(tag, "missing")}, Hash: listArg(hAlice)}})
	if !errors.Is(err, ErrNotEligible) {
		t.Fatalf("a missing copy: %v, want ErrNotEligible", err)
	}
}

// TestJoinListsBadInput refuses a copy outside the join's slot and a hash
// that is not 8 bytes, before any script call.
func TestJoinListsBadInput(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client(t)
	j := NewJoiner(rdb)
	times := openTimes(1)
	times.Lists = Lists{Block: []string{copyKey(LaneTag("other", 0), "bad")}, Hash: listArg(1)}
	if _, err := j.Join(ctx, "ev", "u", times); err == nil {
		t.Fatal("a copy in another slot: no error")
	}
	times.Lists = Lists{Block: []string{copyKey(LaneTag("ev", 0), "bad")}, Hash: "short"}
	if _, err := j.Join(ctx, "ev", "u", times); err == nil {
		t.Fatal("a 5-byte hash: no error")
	}
	if n, _ := rdb.DBSize(ctx).Result(); n != 0 {
		t.Fatalf("%d keys written, want 0", n)
	}
}

// TestJoinListsCluster joins a sale of 8 join shards on a 3-master
// cluster, with each shard's copy of the block list in the shard's slot:
// listed users are refused on whichever shard they land, the others
// join, concurrently (batched by master), and a user without a list check
// is unaffected.
func TestJoinListsCluster(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedisCluster(t, 3).Client(t)
	j := NewJoiner(rdb)
	const shards = 8
	hashOf := func(i int) uint64 { return uint64(0x4242_0000_0000_0000 + i) }
	var listed []uint64
	for i := range 40 {
		if i%3 == 0 {
			listed = append(listed, hashOf(i))
		}
	}
	for s := range shards {
		writeCopy(t, rdb, ShardTag("sh", s), "bad", listed...)
	}
	errs := make([]error, 40)
	done := make(chan int)
	for i := range 40 {
		go func() {
			user := "u" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			times := openTimes(shards)
			times.Lists = Lists{Block: []string{copyKey(JoinTag("sh", user, times), "bad")}, Hash: listArg(hashOf(i))}
			_, errs[i] = j.Join(ctx, "sh", user, times)
			done <- i
		}()
	}
	for range 40 {
		<-done
	}
	for i, err := range errs {
		if i%3 == 0 && !errors.Is(err, ErrBlocked) {
			t.Fatalf("listed user %d: %v, want ErrBlocked", i, err)
		}
		if i%3 != 0 && err != nil {
			t.Fatalf("user %d: %v", i, err)
		}
	}
	if _, err := j.Join(ctx, "sh", "plain", openTimes(shards)); err != nil {
		t.Fatalf("a join without lists: %v", err)
	}
}
