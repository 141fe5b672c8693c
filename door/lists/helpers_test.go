package lists

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/luascript"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/redis/go-redis/v9"
)

func ctxOf(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// eachRedis runs f on a single redis-server and on a Redis Cluster of
// three masters.
func eachRedis(t *testing.T, f func(t *testing.T, rdb redis.UniversalClient)) {
	t.Run("single", func(t *testing.T) { f(t, testenv.StartRedis(t).Client(t)) })
	t.Run("cluster", func(t *testing.T) { f(t, testenv.StartRedisCluster(t, 3).Client(t)) })
}

// hasScript is list_has as the join script runs it.
var hasScript = luascript.New("-- t.lua v1: test\nreturn list_has(KEYS[1], ARGV[1]) and 1 or 0")

// listHas runs list_has on the copy at key for value's hash.
func listHas(t testing.TB, rdb redis.UniversalClient, s *Store, key, value string) bool {
	t.Helper()
	n, err := hasScript.Run(ctxOf(t), rdb, []string{key}, Arg(s.Hash(value))).Int()
	if err != nil {
		t.Fatalf("list_has(%s, %q): %v", key, value, err)
	}
	return n == 1
}

// ids are n user ids with prefix p.
func ids(p string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", p, i)
	}
	return out
}

// csvOf is values as a CSV upload with a header.
func csvOf(values []string) *strings.Reader {
	var b strings.Builder
	b.WriteString("user_id,note\n")
	for _, v := range values {
		b.WriteString(v + ",x\n")
	}
	return strings.NewReader(b.String())
}

// newList creates list name of kind k with values loaded.
func newList(t testing.TB, s *Store, name string, k Kind, values []string) Meta {
	t.Helper()
	ctx := ctxOf(t)
	if _, err := s.Create(ctx, name, k); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	res, err := s.Load(ctx, name, csvOf(values), LoadOptions{Replace: true})
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return res.Meta
}

// sale is a sale whose door blocks block and admits eligible.
func sale(id string, shards int, lanes bool, block, eligible []string) *event.Config {
	c := &event.Config{ID: id, JoinShards: shards}
	c.Door.BlockLists, c.Door.EligibleLists = block, eligible
	if lanes {
		c.Lanes = []event.Lane{{Name: "vip", Share: 0.1}}
	}
	return c
}

func export(t testing.TB, s *Store, name string) string {
	t.Helper()
	var b bytes.Buffer
	if err := s.Export(ctxOf(t), name, &b); err != nil {
		t.Fatalf("export %s: %v", name, err)
	}
	return b.String()
}
