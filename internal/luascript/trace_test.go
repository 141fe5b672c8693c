package luascript

import (
	"context"
	"testing"

	"github.com/anteroom/anteroom/internal/testenv"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestTraceHook runs scripts on a real redis-server through a client
// with TraceHook: under a recording span each script call is a child span
// named after the script's first line (the NOSCRIPT miss and its EVAL
// included), a failing script marks its span failed, a pipeline of
// scripts is one span naming them, other commands and calls without a
// recording parent get none.
func TestTraceHook(t *testing.T) {
	rdb := testenv.StartRedis(t).Client(t)
	rdb.AddHook(TraceHook())
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ok := New("-- ok.lua v3: answers one\nreturn 1\n")
	bad := New("-- bad.lua v1: fails\nreturn redis.error_reply('no')\n")

	bg := context.Background()
	if err := ok.Run(bg, rdb, nil).Err(); err != nil { // no parent: no span
		t.Fatal(err)
	}
	ctx, parent := tp.Tracer("test").Start(bg, "request")
	if err := ok.Run(ctx, rdb, nil).Err(); err != nil { // loaded above: EVALSHA only
		t.Fatal(err)
	}
	if err := bad.Run(ctx, rdb, nil).Err(); err == nil {
		t.Fatal("bad.lua succeeded")
	}
	rdb.Set(ctx, "k", "v", 0) // not a script: no span
	pipe := rdb.Pipeline()
	ok.EvalSha(ctx, pipe, nil)
	ok.EvalSha(ctx, pipe, nil)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	parent.End()

	type span struct {
		name   string
		failed bool
	}
	want := []span{{"redis ok.lua v3", false}, {"redis bad.lua v1", true}, {"redis bad.lua v1", true}, {"redis pipeline", false}, {"request", false}}
	got := exp.GetSpans()
	if len(got) != len(want) {
		var names []string
		for _, s := range got {
			names = append(names, s.Name)
		}
		t.Fatalf("spans %q, want %v", names, want)
	}
	for i, s := range got {
		if w := (span{s.Name, s.Status.Code == codes.Error}); w != want[i] {
			t.Errorf("span %d: %+v, want %+v", i, w, want[i])
		}
		if s.Name != "request" && s.Parent.SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %q is not the request's child", s.Name)
		}
	}
	var scripts []string
	for _, a := range got[3].Attributes {
		if a.Key == "anteroom.scripts" {
			scripts = a.Value.AsStringSlice()
		}
	}
	if len(scripts) != 2 || scripts[0] != "ok.lua v3" || scripts[1] != "ok.lua v3" {
		t.Errorf("pipeline span's scripts %v, want ok.lua v3 twice", scripts)
	}
}
