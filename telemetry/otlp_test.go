package telemetry

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP trace receiver on loopback that keeps the names of
// the spans it was sent.
type collector struct {
	coltrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
}

func (c *collector) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.names = append(c.names, s.Name)
			}
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

func (c *collector) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.names...)
}

// TestOTLPExport: a provider started from the environment sends its spans
// to a real OTLP receiver over each protocol, by Shutdown at the latest
// (the batcher's queue is flushed).
func TestOTLPExport(t *testing.T) {
	t.Run("http", func(t *testing.T) {
		c := &collector{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var req coltrace.ExportTraceServiceRequest
			if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
				http.Error(w, "bad export", http.StatusBadRequest)
				return
			}
			_, _ = c.Export(r.Context(), &req)
			w.Header().Set("Content-Type", "application/x-protobuf")
			_, _ = w.Write(nil)
		}))
		t.Cleanup(srv.Close)
		export(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}, c)
	})
	t.Run("grpc", func(t *testing.T) {
		c := &collector{}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		gs := grpc.NewServer()
		coltrace.RegisterTraceServiceServer(gs, c)
		go func() { _ = gs.Serve(ln) }()
		t.Cleanup(gs.Stop)
		export(t, map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + ln.Addr().String()}, c)
	})
}

// export starts tracing from env, ends one span, shuts down and checks
// that c received it.
func export(t *testing.T, env map[string]string, c *collector) {
	t.Helper()
	cfg, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Start(context.Background(), cfg)
	if err != nil || !tr.Enabled() {
		t.Fatalf("start: %v (enabled %v)", err, tr.Enabled())
	}
	_, span := tr.Provider().Tracer("test").Start(context.Background(), "claim")
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := c.got(); len(got) != 1 || got[0] != "claim" {
		t.Errorf("the collector received spans %q, want [claim]", got)
	}
}
