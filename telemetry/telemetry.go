// Package telemetry is the node's OpenTelemetry tracer provider: off
// unless the standard OTEL_* environment asks for an OTLP exporter
// (FromEnv), and then an SDK provider that batches spans to an OTLP
// endpoint (HTTP or gRPC). Off, the provider is nil: nothing is exported, no connection
// is made, and the packages that trace see no recording span, so they do
// nothing (web starts no span, the script hook of internal/luascript is
// not installed, claim's publisher and the order event skip theirs).
//
// What is traced, and by whom: web (a server span per request, status
// polls only at a ratio, W3C traceparent believed only from trusted
// proxies), internal/luascript (a child span per Redis script), claim (the
// JetStream publish and its acknowledgement, and the trace id in the
// granted order event). Each starts a span only under a recording parent,
// with the parent's provider; this package holds no global and sets none.
package telemetry

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// DefaultServiceName is the service.name of the node's spans when
// OTEL_SERVICE_NAME is unset.
const DefaultServiceName = "anteroom"

// OTLP protocols (Config.Protocol).
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Config says whether and where the node exports spans. The zero value is
// tracing off.
type Config struct {
	// Endpoint is where spans are sent: over HTTP the URL they are
	// posted to (ending in /v1/traces), over gRPC the collector's URL
	// (http://host:4317 without TLS). Empty with a nil Exporter: tracing
	// is off.
	Endpoint string
	// Protocol is the OTLP protocol: ProtocolHTTP or ProtocolGRPC.
	//
	// Default: ProtocolHTTP
	Protocol string
	// Exporter, when set, receives the spans instead of an OTLP endpoint,
	// each as it ends (tests: tracetest.InMemoryExporter).
	//
	// Default: nil (OTLP to Endpoint)
	Exporter sdktrace.SpanExporter
	// Sampler decides which traces are recorded; a span whose parent came
	// from a trusted proxy follows it under the parent-based samplers.
	//
	// Default: sdktrace.ParentBased(sdktrace.AlwaysSample())
	Sampler sdktrace.Sampler
	// ServiceName is the service.name resource attribute.
	//
	// Default: DefaultServiceName
	ServiceName string
}

// Enabled reports whether c turns tracing on.
func (c Config) Enabled() bool { return c.Endpoint != "" || c.Exporter != nil }

// Tracing is the node's tracer provider. A nil *Tracing, or one started
// from a Config that is not Enabled, is tracing off. Safe for concurrent
// use.
type Tracing struct {
	sdk *sdktrace.TracerProvider
}

// Start returns the tracer provider of cfg: nil (off) when cfg is not
// Enabled, otherwise an SDK provider batching to the OTLP endpoint (the
// exporter connects on its first export, not here) or syncing to
// cfg.Exporter. It fails on an endpoint the exporter cannot use.
func Start(ctx context.Context, cfg Config) (*Tracing, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	if cfg.Sampler == nil {
		cfg.Sampler = sdktrace.ParentBased(sdktrace.AlwaysSample())
	}
	if cfg.ServiceName == "" {
		cfg.ServiceName = DefaultServiceName
	}
	res := resource.NewSchemaless(attribute.String("service.name", cfg.ServiceName))
	opts := []sdktrace.TracerProviderOption{sdktrace.WithSampler(cfg.Sampler), sdktrace.WithResource(res)}
	if cfg.Exporter != nil {
		opts = append(opts, sdktrace.WithSyncer(cfg.Exporter))
	} else {
		var exp sdktrace.SpanExporter
		var err error
		switch cfg.Protocol {
		case "", ProtocolHTTP:
			exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.Endpoint))
		case ProtocolGRPC:
			exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
		default:
			err = fmt.Errorf("protocol %q: want %s or %s", cfg.Protocol, ProtocolHTTP, ProtocolGRPC)
		}
		if err != nil {
			return nil, fmt.Errorf("tracing: OTLP exporter for %s: %w", cfg.Endpoint, err)
		}
		// Batched: a request never waits for the collector, and spans
		// beyond the queue (2048) are dropped rather than held.
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	return &Tracing{sdk: sdktrace.NewTracerProvider(opts...)}, nil
}

// Provider returns the tracer provider, or nil when tracing is off: the
// edge then starts no span at all (web.Config.Tracer).
func (t *Tracing) Provider() trace.TracerProvider {
	if t == nil || t.sdk == nil {
		return nil
	}
	return t.sdk
}

// Enabled reports whether t records spans.
func (t *Tracing) Enabled() bool { return t != nil && t.sdk != nil }

// Shutdown exports the spans still queued and stops the exporter, within
// ctx. Later spans are dropped. A nil or off t does nothing.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	if err := t.sdk.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}
