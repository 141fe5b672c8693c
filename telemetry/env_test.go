package telemetry

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestFromEnv: which OTEL_* environments turn tracing on, where the spans
// go, and which are refused at start.
func TestFromEnv(t *testing.T) {
	for _, c := range []struct {
		name     string
		env      map[string]string
		endpoint string // "" : off
		sampler  string // the sampler's description, "" for the default
		err      string
	}{
		{name: "nothing set", env: nil},
		{name: "service name only", env: map[string]string{"OTEL_SERVICE_NAME": "queue"}},
		{name: "exporter otlp", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, endpoint: "http://localhost:4318/v1/traces"},
		{name: "endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}, endpoint: "http://collector:4318/v1/traces"},
		{name: "traces endpoint as is", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b/otlp/traces"}, endpoint: "https://b/otlp/traces"},
		{name: "none wins over an endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318"}},
		{name: "sdk disabled", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}},
		{name: "ratio sampler", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"},
			endpoint: "http://localhost:4318/v1/traces", sampler: "ParentBased{root:TraceIDRatioBased{0.25}"},
		{name: "always off", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "always_off"},
			endpoint: "http://localhost:4318/v1/traces", sampler: "AlwaysOffSampler"},
		{name: "other exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: "want otlp or none"},
		{name: "grpc", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, endpoint: "http://localhost:4317"},
		{name: "grpc endpoint as is", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4317"}, endpoint: "https://c:4317"},
		{name: "http/json", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, err: "want http/protobuf or grpc"},
		{name: "bad endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "collector:4318"}, err: "want an http(s) URL"},
		{name: "bad sampler", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "jaeger_remote"}, err: "OTEL_TRACES_SAMPLER"},
		{name: "bad ratio", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, err: "from 0 to 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := FromEnv(func(k string) string { return c.env[k] })
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Endpoint != c.endpoint || cfg.Enabled() != (c.endpoint != "") {
				t.Errorf("endpoint %q (enabled %v), want %q", cfg.Endpoint, cfg.Enabled(), c.endpoint)
			}
			got := ""
			if cfg.Sampler != nil {
				got = cfg.Sampler.Description()
			}
			if !strings.HasPrefix(got, c.sampler) {
				t.Errorf("sampler %q, want %q", got, c.sampler)
			}
		})
	}
}

// TestStartOff: a Config that is not Enabled starts no provider, and a
// nil Tracing is safe to use.
func TestStartOff(t *testing.T) {
	tr, err := Start(context.Background(), Config{ServiceName: "x"})
	if err != nil || tr.Enabled() || tr.Provider() != nil || tr.Shutdown(context.Background()) != nil {
		t.Fatalf("off: %v, enabled %v, provider %v", err, tr.Enabled(), tr.Provider())
	}
}

// TestStartExporter: spans of a started provider reach the exporter, with
// the service name, and none ended after Shutdown.
func TestStartExporter(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr, err := Start(context.Background(), Config{Exporter: exp, ServiceName: "shop-queue", Sampler: sdktrace.AlwaysSample()})
	if err != nil || !tr.Enabled() {
		t.Fatalf("start: %v", err)
	}
	_, span := tr.Provider().Tracer("test").Start(context.Background(), "one")
	span.End()
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "one" {
		t.Fatalf("spans %v, want the one ended", spans)
	}
	if v, ok := spans[0].Resource.Set().Value("service.name"); !ok || v.AsString() != "shop-queue" {
		t.Errorf("service.name %v, want shop-queue", v)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, late := tr.Provider().Tracer("test").Start(context.Background(), "late")
	late.End()
	for _, s := range exp.GetSpans() {
		if s.Name == "late" {
			t.Errorf("a span ended after Shutdown was exported")
		}
	}
}
