package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkObserveSteady is one node's per-sale cost on each lifecycle
// tick when nothing changes: one script call.
func BenchmarkObserveSteady(b *testing.B) {
	r := testenv.StartRedis(b)
	ns := testenv.StartNATS(b)
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := EnsureStream(ctx, js, 1); err != nil {
		b.Fatal(err)
	}
	rec := NewRecorder(r.Client(b), js)
	sl := sale("bench", 1, time.Date(2026, 1, 1, 12, 0, 1, 0, time.UTC))
	if err := rec.Observe(ctx, sl); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := rec.Observe(ctx, sl); err != nil {
			b.Fatal(err)
		}
	}
}
