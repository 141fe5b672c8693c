package claim

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Tracing: the claim package starts spans only under a recording span of
// its caller's (a traced request; package telemetry), with that span's
// provider, so a node without tracing pays one context lookup per claim
// and nothing more.

// tracerName is the instrumentation scope of the claim package's spans.
const tracerName = "github.com/anteroom/anteroom/claim"

// childSpan starts span name (of kind) under ctx's span when that one is
// recording. Otherwise it returns ctx and ctx's own non-recording span,
// on which every call is a no-op: callers set attributes only when the
// span IsRecording.
func childSpan(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(tracerName).Start(ctx, name, trace.WithSpanKind(kind))
}

// traceID is the id of the trace ctx's span belongs to, in W3C hex, when
// that trace is sampled (recorded and exported); otherwise "".
func traceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsSampled() {
		return ""
	}
	return sc.TraceID().String()
}

// endSpan records err, if any, on span and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
