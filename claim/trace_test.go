package claim

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkTracingOff measures what tracing adds to a claim when the
// request is not traced (tracing off): the order event's trace id and
// the publish's two span checks, on a context like a handler's.
//
//	go test -run '^$' -bench TracingOff -benchmem ./claim
func BenchmarkTracingOff(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if traceID(ctx) != "" {
			b.Fatal("a trace id without a span")
		}
		pctx, pub := childSpan(ctx, "jetstream publish", 0)
		_, ack := childSpan(pctx, "jetstream ack", 0)
		if pub.IsRecording() || ack.IsRecording() {
			b.Fatal("recording without a parent")
		}
	}
}

// TestTraceID: the order event's trace id is the sampled trace's, and
// none for a trace that is not sampled or no trace at all; child spans
// start only under a recording parent.
func TestTraceID(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	on := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	off := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	bg := context.Background()
	ctx, span := on.Tracer("t").Start(bg, "request")
	if got, want := traceID(ctx), span.SpanContext().TraceID().String(); got != want || len(got) != 32 {
		t.Errorf("sampled: trace id %q, want %q", got, want)
	}
	_, child := childSpan(ctx, "child", 0)
	child.End()
	span.End()
	if n := len(exp.GetSpans()); n != 2 {
		t.Errorf("%d spans under a recording parent, want 2", n)
	}
	ctx, span = off.Tracer("t").Start(bg, "request")
	if got := traceID(ctx); got != "" {
		t.Errorf("not sampled: trace id %q, want none", got)
	}
	if _, child := childSpan(ctx, "child", 0); child.IsRecording() {
		t.Error("a child of a span that is not recorded records")
	}
	span.End()
	if got := traceID(bg); got != "" {
		t.Errorf("no span: trace id %q, want none", got)
	}
}
