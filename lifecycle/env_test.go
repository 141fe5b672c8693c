package lifecycle

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// servers are one redis-server and one NATS server for a test.
type servers struct {
	rdb  redis.UniversalClient
	nats string
}

func startServers(t *testing.T) servers {
	t.Helper()
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	return servers{rdb: r.Client(t), nats: ns.URL()}
}

// eachServers runs f as a subtest on redis-server and on the embedded
// default (miniredis), each with a NATS server (testenv.EachRedis).
func eachServers(t *testing.T, f func(t *testing.T, s servers)) {
	t.Helper()
	testenv.EachRedis(t, func(t *testing.T, rdb *redis.Client) {
		f(t, servers{rdb: rdb, nats: testenv.StartNATS(t).URL()})
	})
}

// connect opens a NATS connection of its own (one per simulated node) and
// makes sure the lifecycle stream exists.
func (s servers) connect(t *testing.T) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(s.nats)
	if err != nil {
		t.Fatalf("nats connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := EnsureStream(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// subjectCounts returns how many messages the stream holds per subject
// of sale ev.
func subjectCounts(t *testing.T, js jetstream.JetStream, ev string) map[string]uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(Subject(ev, ">")))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for s, n := range info.State.Subjects {
		out[s[len(Subject(ev, "")):]] = n
	}
	return out
}

// sale builds a node's view of sale ev at Redis time at.
func sale(ev string, version int64, at time.Time) *admission.Sale {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	return &admission.Sale{
		Config: event.Config{
			ID: ev, Version: version, StartsAt: start, EndsAt: start.Add(time.Hour),
			Seed: "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", SeedCommitment: "c0",
		},
		Reading: admission.Reading{ServerTime: at},
	}
}

func jsonUnmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }
