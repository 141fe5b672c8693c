package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/web"
	"github.com/anteroom/anteroom/web/kit"
)

// observed is one call of Observe.Request.
type observed struct {
	route, method string
	status        int
}

// recorder collects Observe.Request calls.
type recorder struct {
	mu   sync.Mutex
	seen []observed
}

func (r *recorder) request(route, method string, status int, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, observed{route, method, status})
}

func (r *recorder) last() observed {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) == 0 {
		return observed{}
	}
	return r.seen[len(r.seen)-1]
}

// edge is an app with only what the probes and the metrics need; ready is
// its readiness check.
func edge(t *testing.T, cfg web.Config, ready func(context.Context) error) (*recorder, func(method, path string) *http.Response) {
	t.Helper()
	rec := &recorder{}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "anteroom_up 1\n") })
	app, err := web.New(cfg, web.Deps{Ready: ready, Metrics: metrics, Observe: web.Observe{Request: rec.request}})
	if err != nil {
		t.Fatal(err)
	}
	return rec, func(method, path string) *http.Response {
		t.Helper()
		resp, err := app.Test(httptest.NewRequest(method, path, nil), -1)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return resp
	}
}

func TestObserveRouteTemplates(t *testing.T) {
	rec, do := edge(t, web.Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, func(context.Context) error { return nil })
	for _, c := range []struct {
		method, path string
		want         observed
	}{
		{"GET", "/healthz", observed{"/healthz", "GET", 200}},
		{"GET", "/readyz", observed{"/readyz", "GET", 200}},
		{"GET", "/metrics", observed{"/metrics", "GET", 200}},
		// Raw paths never become labels: an unknown path, an invalid event
		// id answered by the group's middleware.
		{"GET", "/no/such/path/12345", observed{"unmatched", "GET", 404}},
		{"GET", "/events/NOT!VALID/status", observed{"/events/:id", "GET", 404}},
		{"POST", "/healthz", observed{"unmatched", "POST", 404}},
	} {
		resp := do(c.method, c.path)
		resp.Body.Close()
		if got := rec.last(); got != c.want {
			t.Errorf("%s %s observed %+v, want %+v", c.method, c.path, got, c.want)
		}
	}
	resp := do("GET", "/metrics")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "anteroom_up 1") {
		t.Errorf("/metrics: %d %q", resp.StatusCode, body)
	}
}

// logLines decodes JSON log lines.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// TestPanicAnswersWithRequestID shows a panic becoming a 500 problem whose
// request id is the one on the access-log line and the error line.
func TestPanicAnswersWithRequestID(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	rec, do := edge(t, web.Config{Log: log}, func(context.Context) error { panic("backend exploded") })
	resp := do("GET", "/readyz")
	defer resp.Body.Close()
	var p kit.Problem
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 500 || p.Code != "internal" || p.RequestID == "" {
		t.Fatalf("answer %d %+v, want 500 internal with a request id", resp.StatusCode, p)
	}
	if strings.Contains(p.Detail, "exploded") {
		t.Errorf("internal error text reached the client: %q", p.Detail)
	}
	if got := rec.last(); got != (observed{"/readyz", "GET", 500}) {
		t.Errorf("observed %+v, want /readyz GET 500", got)
	}
	lines := logLines(t, &buf)
	var access bool
	for _, l := range lines {
		if l["request_id"] != p.RequestID {
			t.Errorf("log line %v: request_id want %s", l, p.RequestID)
		}
		if l["msg"] == "request" {
			access = true
			if l["route"] != "/readyz" || l["status"] != float64(500) || l["level"] != "WARN" {
				t.Errorf("access line %v", l)
			}
		}
	}
	if !access {
		t.Errorf("no access-log line for the 500 in %v", lines)
	}
}
