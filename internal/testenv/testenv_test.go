package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/testenv"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestRedisPingAndCommandCount(t *testing.T) {
	t.Parallel()
	r := testenv.StartRedis(t)
	if got := r.CommandCount(t); got != 0 {
		t.Errorf("CommandCount after start = %d, want 0 (readiness probes must not count)", got)
	}
	opt, err := redis.ParseURL(r.URL())
	if err != nil {
		t.Fatalf("ParseURL(%q): %v", r.URL(), err)
	}
	if opt.Addr != r.Addr() {
		t.Errorf("URL addr = %q, want %q", opt.Addr, r.Addr())
	}
	c := r.Client(t)
	if err := c.Ping(ctx(t)).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	before := r.CommandCount(t)
	if err := c.Set(ctx(t), "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got := r.CommandCount(t) - before; got != 1 {
		t.Errorf("commands for one SET = %d, want 1 (stats %v)", got, r.CommandStats(t))
	}
	idle := r.CommandCount(t)
	if got := r.CommandCount(t) - idle; got != 0 {
		t.Errorf("commands while idle = %d, want 0", got)
	}
}

func TestRedisKillRestart(t *testing.T) {
	t.Parallel()
	r := testenv.StartRedis(t)
	c := r.Client(t)
	if err := c.Ping(ctx(t)).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	r.Kill(t)
	if conn, err := net.Dial("tcp", r.Addr()); err == nil {
		conn.Close()
		t.Fatal("connect after Kill succeeded, want connection refused")
	}
	r.Restart(t)
	if err := c.Ping(ctx(t)).Err(); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	r.Stop(t)
	r.Restart(t)
	if err := r.Client(t).Ping(ctx(t)).Err(); err != nil {
		t.Fatalf("PING after Stop and Restart: %v", err)
	}
}

func TestRedisReplicaFollowsPrimary(t *testing.T) {
	t.Parallel()
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
	if err := primary.Client(t).Set(ctx(t), "seat", "42", 0).Err(); err != nil {
		t.Fatalf("SET on primary: %v", err)
	}
	rc := replica.Client(t)
	testenv.Eventually(t, "GET seat on replica", 10*time.Second, func() error {
		got, err := rc.Get(ctx(t), "seat").Result()
		if err != nil {
			return err
		}
		if got != "42" {
			return fmt.Errorf("got %q, want %q", got, "42")
		}
		return nil
	})
}

func TestRedisCluster(t *testing.T) {
	t.Parallel()
	for _, masters := range []int{3, 2} {
		t.Run(fmt.Sprintf("masters=%d", masters), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			cl := testenv.StartRedisCluster(t, masters)
			t.Logf("cluster of %d ready in %v", masters, time.Since(start))
			if got := len(cl.Addrs()); got != masters {
				t.Fatalf("len(Addrs()) = %d, want %d", got, masters)
			}
			c := cl.Client(t)
			const keys = 200
			for i := 0; i < keys; i++ {
				if err := c.Set(ctx(t), fmt.Sprintf("key:%d", i), i, 0).Err(); err != nil {
					t.Fatalf("SET key:%d: %v", i, err)
				}
			}
			for i := 0; i < keys; i++ {
				got, err := c.Get(ctx(t), fmt.Sprintf("key:%d", i)).Int()
				if err != nil || got != i {
					t.Fatalf("GET key:%d = %d, %v; want %d", i, got, err, i)
				}
			}
			// Every node holds some of the keys: they really spread over slots.
			for i := 0; i < masters; i++ {
				n, err := cl.Node(i).Client(t).DBSize(ctx(t)).Result()
				if err != nil || n == 0 {
					t.Errorf("node %d DBSIZE = %d, %v; want > 0", i, n, err)
				}
			}
		})
	}
}

func TestNATSDedupAndRestart(t *testing.T) {
	t.Parallel()
	n := testenv.StartNATS(t)
	js := testenv.ConnectJS(t, n.URL())
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatalf("create stream: %v", err)
	}
	for i := 0; i < 2; i++ {
		ack, err := js.Publish(ctx(t), "orders.1", []byte("hi"), jetstream.WithMsgID("order-1"))
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		if want := i == 1; ack.Duplicate != want {
			t.Errorf("publish %d: Duplicate = %v, want %v", i, ack.Duplicate, want)
		}
	}
	msgs := func(js jetstream.JetStream) uint64 {
		t.Helper()
		s, err := js.Stream(ctx(t), "ORDERS")
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		info, err := s.Info(ctx(t))
		if err != nil {
			t.Fatalf("stream info: %v", err)
		}
		return info.State.Msgs
	}
	if got := msgs(js); got != 1 {
		t.Fatalf("messages = %d, want 1", got)
	}

	n.Restart(t)
	// A new client: the old one may still be noticing the restart, and a
	// request sent into its dead connection is lost.
	if got := msgs(testenv.ConnectJS(t, n.URL())); got != 1 {
		t.Fatalf("messages after restart = %d, want 1 (store dir kept)", got)
	}
}

func TestNATSCluster(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := testenv.StartNATSCluster(t, 3)
	t.Logf("NATS cluster of 3 ready (meta leader %s) in %v", c.MetaLeader().Name(), time.Since(start))
	if got := len(c.URLs()); got != 3 {
		t.Fatalf("len(URLs()) = %d, want 3", got)
	}

	js := testenv.ConnectJS(t, c.URL())
	// No retry here: the cluster must be ready for an R3 stream at once.
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{
		Name: "EVENTS", Subjects: []string{"events.>"}, Replicas: 3,
	}); err != nil {
		t.Fatalf("create R3 stream right after StartNATSCluster: %v", err)
	}
	if _, err := js.Publish(ctx(t), "events.a", []byte("1")); err != nil {
		t.Fatalf("publish: %v", err)
	}

	// Stop the stream leader: the worst case for the publisher.
	stopped := -1
	for i := 0; i < 3; i++ {
		if c.Server(i).JetStreamIsStreamLeader("$G", "EVENTS") {
			stopped = i
		}
	}
	if stopped < 0 {
		t.Fatal("no server leads stream EVENTS")
	}
	c.Stop(stopped)
	stoppedAt := time.Now()
	testenv.Eventually(t, "publish after stopping the stream leader", 20*time.Second, func() error {
		pctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := js.Publish(pctx, "events.a", []byte("2"), jetstream.WithMsgID("second"))
		return err
	})
	t.Logf("publish succeeded %v after stopping server %d", time.Since(stoppedAt), stopped)

	restartAt := time.Now()
	c.Restart(t, stopped)
	t.Logf("server %d restarted and cluster ready in %v", stopped, time.Since(restartAt))
	testenv.Eventually(t, "restarted server has both messages", 10*time.Second, func() error {
		ictx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err := js.Stream(ictx, "EVENTS")
		if err != nil {
			return err
		}
		info, err := s.Info(ictx)
		if err != nil {
			return err
		}
		if info.State.Msgs != 2 {
			return fmt.Errorf("stream has %d messages, want 2", info.State.Msgs)
		}
		if !c.Server(stopped).JetStreamIsCurrent() {
			return errors.New("restarted server not current")
		}
		return nil
	})
}
