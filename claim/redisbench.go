package claim

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/luascript"
)

// redisBenchmarkEvent names the bucket RedisBenchmark lays.
const redisBenchmarkEvent = "rb"

var masterReplID = regexp.MustCompile(`master_replid:(\w+)`)

// RedisBenchmark loads claim.lua into the redis-server rdb, lays one bucket
// of units there as Lay would (the stock and the server's replication id),
// and returns what follows redis-benchmark's command name for a call of the
// script alone: "EVALSHA", the script's SHA1, its keys and arguments, with
// __rand_int__ where redis-benchmark -r puts a random number, so that each
// call grants one unit to a new user, with no signals. Granted reads how
// many the bucket granted. It lives beside the script, so a change of the
// script's layout changes it too (TestRedisBenchmarkCall runs it).
func RedisBenchmark(ctx context.Context, rdb *redis.Client, units int64) (command []string, granted func(context.Context) (int64, error), err error) {
	sha, err := rdb.ScriptLoad(ctx, luascript.Source(claimLua)).Result()
	if err != nil {
		return nil, nil, err
	}
	k := bucketOf(redisBenchmarkEvent, 0)
	info, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		return nil, nil, err
	}
	m := masterReplID.FindStringSubmatch(info)
	if m == nil {
		return nil, nil, fmt.Errorf("claim: no master_replid in INFO replication")
	}
	if err := rdb.Set(ctx, k.stock(), units, 0).Err(); err != nil {
		return nil, nil, err
	}
	if err := rdb.HSet(ctx, k.stats(), "epoch", m[1]).Err(); err != nil {
		return nil, nil, err
	}
	const user, id = "__rand_int__", "0-__rand_int__"
	payload, err := marshalOrderEvent(&OrderEvent{Type: KindGranted, Event: redisBenchmarkEvent, ClaimID: id, User: user, Pos: 1, Units: 1, Idem: "k", At: time.Unix(1767225600, 0).UTC()})
	if err != nil {
		return nil, nil, err
	}
	keys := append(k.stockKeys(3), k.userClaims(user), k.userHistory(user), k.idem(user, "k"))
	command = append([]string{"EVALSHA", sha, strconv.Itoa(len(keys))}, keys...)
	// user, limit, claim id, order event, position, idempotency key and
	// TTL (s), claim TTL (ms), no signals, their expiry.
	command = append(command, user, "1", id, string(payload), "1", "k", "86400", "900000", "0", "0")
	granted = func(ctx context.Context) (int64, error) { return rdb.HGet(ctx, k.stats(), "granted").Int64() }
	return command, granted, nil
}
