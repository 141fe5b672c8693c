package telemetry

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The standard variables FromEnv reads (OpenTelemetry's SDK environment
// specification); docs/operate.md ("Traces") documents them.
const (
	envSDKDisabled      = "OTEL_SDK_DISABLED"
	envTracesExporter   = "OTEL_TRACES_EXPORTER"
	envEndpoint         = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint   = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envProtocol         = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol   = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	envServiceName      = "OTEL_SERVICE_NAME"
	envTracesSampler    = "OTEL_TRACES_SAMPLER"
	envTracesSamplerArg = "OTEL_TRACES_SAMPLER_ARG"
	defaultOTLPEndpoint = "http://localhost:4318"
	defaultGRPCEndpoint = "http://localhost:4317"
	otlpTracesPath      = "/v1/traces"
)

// FromEnv reads the tracing configuration from the standard OTEL_*
// variables, through getenv. Tracing is on when OTEL_TRACES_EXPORTER is
// otlp, or when it is unset and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT is set; it is off otherwise (unlike the
// specification's default of otlp: a node exports nothing unless asked),
// with OTEL_TRACES_EXPORTER=none, and with OTEL_SDK_DISABLED=true.
//
// The protocol is OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
// OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf (the default) or grpc. The
// endpoint is OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is; else, over
// HTTP, OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended (default
// http://localhost:4318/v1/traces), over gRPC OTEL_EXPORTER_OTLP_ENDPOINT
// as it is (default http://localhost:4317; http: without TLS). The
// sampler is OTEL_TRACES_SAMPLER with
// OTEL_TRACES_SAMPLER_ARG (always_on, always_off, traceidratio and their
// parentbased_ forms; default parentbased_always_on); the service name
// OTEL_SERVICE_NAME. An exporter other than otlp or none, another
// protocol, an endpoint that is not an http(s) URL or a sampler the SDK
// does not know is an error, so a misconfigured node does not start.
func FromEnv(getenv func(string) string) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	if strings.EqualFold(get(envSDKDisabled), "true") {
		return Config{}, nil
	}
	exporter := strings.ToLower(get(envTracesExporter))
	switch exporter {
	case "none":
		return Config{}, nil
	case "":
		if get(envTracesEndpoint) == "" && get(envEndpoint) == "" {
			return Config{}, nil
		}
	case "otlp":
	default:
		return Config{}, fmt.Errorf("%s=%q: want otlp or none", envTracesExporter, exporter)
	}
	proto := get(envTracesProtocol)
	if proto == "" {
		proto = get(envProtocol)
	}
	switch proto {
	case "":
		proto = ProtocolHTTP
	case ProtocolHTTP, ProtocolGRPC:
	default:
		return Config{}, fmt.Errorf("OTLP protocol %q: want %s or %s", proto, ProtocolHTTP, ProtocolGRPC)
	}
	endpoint := get(envTracesEndpoint)
	switch {
	case endpoint != "":
	case proto == ProtocolGRPC: // the collector's address, as it is
		if endpoint = get(envEndpoint); endpoint == "" {
			endpoint = defaultGRPCEndpoint
		}
	default: // the collector's base URL, with the traces path
		base := get(envEndpoint)
		if base == "" {
			base = defaultOTLPEndpoint
		}
		endpoint = strings.TrimSuffix(base, "/") + otlpTracesPath
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Config{}, fmt.Errorf("OTLP traces endpoint %q: want an http(s) URL", endpoint)
	}
	sampler, err := samplerFromEnv(get(envTracesSampler), get(envTracesSamplerArg))
	if err != nil {
		return Config{}, err
	}
	return Config{Endpoint: endpoint, Protocol: proto, Sampler: sampler, ServiceName: get(envServiceName)}, nil
}

// samplerFromEnv is the sampler named by OTEL_TRACES_SAMPLER (name) and
// OTEL_TRACES_SAMPLER_ARG (arg); nil for the default.
func samplerFromEnv(name, arg string) (sdktrace.Sampler, error) {
	ratio := func() (sdktrace.Sampler, error) {
		if arg == "" {
			return sdktrace.TraceIDRatioBased(1), nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || !(r >= 0 && r <= 1) {
			return nil, fmt.Errorf("%s=%q: want a ratio from 0 to 1", envTracesSamplerArg, arg)
		}
		return sdktrace.TraceIDRatioBased(r), nil
	}
	switch strings.ToLower(name) {
	case "":
		return nil, nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		return ratio()
	case "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "parentbased_traceidratio":
		s, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.ParentBased(s), nil
	}
	return nil, fmt.Errorf("%s=%q: want always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio", envTracesSampler, name)
}
