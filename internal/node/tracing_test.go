package node_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/telemetry"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// spansNamed returns the spans of exp named name.
func spansNamed(exp *tracetest.InMemoryExporter, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// oneSpan returns the one span of exp named name in trace tid (any trace
// when tid is invalid), failing the test when there is not exactly one.
func oneSpan(t *testing.T, exp *tracetest.InMemoryExporter, name string, tid trace.TraceID) tracetest.SpanStub {
	t.Helper()
	var found tracetest.SpanStubs
	for _, s := range spansNamed(exp, name) {
		if !tid.IsValid() || s.SpanContext.TraceID() == tid {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range exp.GetSpans() {
			names = append(names, s.Name+" "+s.SpanContext.TraceID().String())
		}
		t.Fatalf("%d spans %q in trace %s, want 1; spans: %s", len(found), name, tid, strings.Join(names, ", "))
	}
	return found[0]
}

// scriptSpan returns the successful span name of a script call in trace
// tid, failing the test unless there is one, and unless every span of
// that name in the trace is a child of parent: a fresh Redis answers the
// first EVALSHA NOSCRIPT, and go-redis then sends EVAL (two calls, two
// spans).
func scriptSpan(t *testing.T, exp *tracetest.InMemoryExporter, name string, tid trace.TraceID, parent tracetest.SpanStub) tracetest.SpanStub {
	t.Helper()
	var ok tracetest.SpanStubs
	for _, s := range spansNamed(exp, name) {
		if s.SpanContext.TraceID() != tid {
			continue
		}
		if s.Parent.SpanID() != parent.SpanContext.SpanID() {
			t.Errorf("%q span's parent is %s, want %q (%s)", name, s.Parent.SpanID(), parent.Name, parent.SpanContext.SpanID())
		}
		if s.Status.Code != codes.Error {
			ok = append(ok, s)
		}
	}
	if len(ok) != 1 {
		t.Fatalf("%d successful spans %q in trace %s, want 1", len(ok), name, tid)
	}
	return ok[0]
}

// claimOne admits user to a fresh sale ev on n and claims one unit with
// the extra headers hdr; it returns the claim id.
func claimOne(t *testing.T, n *node.Node, ev, user string, hdr map[string]string) string {
	t.Helper()
	nodetest.CreateSale(t, n, ev, openSale(10, 1, 0, 0, 1000))
	token := nodetest.AdmitUser(t, n, ev, user)
	h := map[string]string{"X-User-ID": user, "Authorization": "Bearer " + token, "Idempotency-Key": "k1"}
	for k, v := range hdr {
		h[k] = v
	}
	a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/"+ev+"/claim", h, nil)
	if a.Status != http.StatusCreated {
		t.Fatalf("claim: %d %s", a.Status, a.Raw)
	}
	return nodetest.Str(a.Body, "claim_id")
}

// grantedEvent reads the granted order event of claim id of ev from the
// node's stream.
func grantedEvent(t *testing.T, n *node.Node, ev, id string) claim.OrderEvent {
	t.Helper()
	evs, err := claim.ReadEvents(context.Background(), n.JS, ev, claim.KindGranted)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.ClaimID == id {
			return e
		}
	}
	t.Fatalf("no granted event of claim %s on the stream (%d events)", id, len(evs))
	return claim.OrderEvent{}
}

// TestTraceClaim follows one claim through a node with tracing on: its
// server span, the claim script's span under it, the JetStream publish
// and, within that, the wait for the acknowledgement are one trace, and
// the granted order event read back from the stream carries that trace's
// id. The join, the caller's claims, the release and the admin calls
// are server spans of their own.
func TestTraceClaim(t *testing.T) {
	r, ns := testenv.StartRedis(t), testenv.StartNATS(t)
	exp := tracetest.NewInMemoryExporter()
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(),
		Tracing: telemetry.Config{Exporter: exp}}))
	id := claimOne(t, n, "traced", "alice", nil)

	srv := oneSpan(t, exp, "POST /events/:id/claim", trace.TraceID{})
	tid := srv.SpanContext.TraceID()
	if srv.SpanKind != trace.SpanKindServer || srv.Parent.IsValid() {
		t.Errorf("claim span: kind %v, parent %v; want a server span starting its trace", srv.SpanKind, srv.Parent)
	}
	script := scriptSpan(t, exp, "redis claim.lua v3", tid, srv)
	pub := oneSpan(t, exp, "jetstream publish", tid)
	ack := oneSpan(t, exp, "jetstream ack", tid)
	for _, c := range []struct {
		name          string
		child, parent tracetest.SpanStub
	}{{"publish", pub, srv}, {"ack", ack, pub}} {
		if c.child.Parent.SpanID() != c.parent.SpanContext.SpanID() {
			t.Errorf("%s span's parent is %s, want %q (%s)", c.name, c.child.Parent.SpanID(), c.parent.Name, c.parent.SpanContext.SpanID())
		}
	}
	if pub.SpanKind != trace.SpanKindProducer || script.SpanKind != trace.SpanKindClient {
		t.Errorf("kinds: publish %v, script %v; want producer, client", pub.SpanKind, script.SpanKind)
	}
	if !script.EndTime.Before(pub.StartTime) && !script.EndTime.Equal(pub.StartTime) {
		t.Errorf("the script span ends at %v, after the publish starts at %v", script.EndTime, pub.StartTime)
	}
	if got := grantedEvent(t, n, "traced", id).TraceID; got != tid.String() {
		t.Errorf("order event trace_id %q, want the claim's trace %s", got, tid)
	}

	// The caller's claims, a release and the admin API are traced too,
	// each a server span of its own trace.
	alice := map[string]string{"X-User-ID": "alice"}
	nodetest.Call(t, http.MethodGet, n.URL()+"/events/traced/claims", alice, nil)
	nodetest.Call(t, http.MethodPost, n.URL()+"/events/traced/claims/"+id+"/release", alice, nil)
	nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/traced", map[string]string{"Authorization": "Bearer " + n.AdminToken}, nil)
	for _, name := range []string{"GET /events/:id/claims", "POST /events/:id/claims/:claim_id/release", "PUT /admin/events/:id/", "GET /admin/events/:id/", "POST /events/:id/join"} {
		if s := oneSpan(t, exp, name, trace.TraceID{}); s.SpanKind != trace.SpanKindServer || s.Parent.IsValid() || s.SpanContext.TraceID() == tid {
			t.Errorf("%s: kind %v, parent %v, trace %s; want a server span starting a trace of its own", name, s.SpanKind, s.Parent, s.SpanContext.TraceID())
		}
	}
}

// TestTraceparentTrustedOnly: a W3C traceparent joins the request to the
// caller's trace only from a trusted proxy; from any other peer it is
// ignored and the request starts a trace of its own. A trusted parent
// that is not sampled is followed too: the claim is not recorded and its
// order event carries no trace id.
func TestTraceparentTrustedOnly(t *testing.T) {
	r, ns := testenv.StartRedis(t), testenv.StartNATS(t)
	const (
		tid    = "4bf92f3577b34da6a3ce929d0e0e4736"
		parent = "00f067aa0ba902b7"
	)
	sampled := map[string]string{"traceparent": "00-" + tid + "-" + parent + "-01"}
	check := func(t *testing.T, trusted bool) {
		exp := tracetest.NewInMemoryExporter()
		cfg := node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Tracing: telemetry.Config{Exporter: exp}}
		if trusted {
			cfg = nodetest.HeaderMode(cfg) // trusts 127.0.0.1, the test's address
		}
		n := nodetest.Start(t, cfg)
		ev := "tp" + map[bool]string{true: "trusted", false: "untrusted"}[trusted]
		nodetest.CreateSale(t, n, ev, openSale(10, 1, 0, 0, 1000))
		if a := nodetest.Call(t, http.MethodGet, n.URL()+"/events/"+ev, sampled, nil); a.Status != http.StatusOK {
			t.Fatalf("event: %d %s", a.Status, a.Raw)
		}
		s := oneSpan(t, exp, "GET /events/:id/", trace.TraceID{}) // the group's route
		joined := s.SpanContext.TraceID().String() == tid && s.Parent.SpanID().String() == parent && s.Parent.IsRemote()
		if joined != trusted {
			t.Errorf("trusted peer %v: span in trace %s with parent %s (remote %v); joined the caller's trace: %v, want %v",
				trusted, s.SpanContext.TraceID(), s.Parent.SpanID(), s.Parent.IsRemote(), joined, trusted)
		}
		if !trusted && (s.SpanContext.TraceID().String() == tid || s.Parent.IsValid()) {
			t.Errorf("untrusted peer: span in trace %s, parent %v; want a new root trace", s.SpanContext.TraceID(), s.Parent)
		}
	}
	t.Run("trusted", func(t *testing.T) { check(t, true) })
	t.Run("untrusted", func(t *testing.T) { check(t, false) })

	t.Run("trusted-not-sampled", func(t *testing.T) {
		exp := tracetest.NewInMemoryExporter()
		n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Tracing: telemetry.Config{Exporter: exp}}))
		id := claimOne(t, n, "tpoff", "bob", map[string]string{"traceparent": "00-" + tid + "-" + parent + "-00"})
		if got := spansNamed(exp, "POST /events/:id/claim"); len(got) != 0 {
			t.Errorf("%d claim spans recorded under a parent that is not sampled, want 0", len(got))
		}
		if got := grantedEvent(t, n, "tpoff", id).TraceID; got != "" {
			t.Errorf("order event trace_id %q of a claim whose trace is not sampled, want none", got)
		}
	})
}

// TestTraceStatusPolls: status polls are traced at the node's ratio: at
// 1 each poll is a span (with no child: a poll calls no Redis script), at
// none no poll is, while the join beside them is traced either way.
func TestTraceStatusPolls(t *testing.T) {
	r, ns := testenv.StartRedis(t), testenv.StartNATS(t)
	for _, c := range []struct {
		name  string
		ratio float64
		want  int
	}{{"all", 1, 20}, {"none", -1, 0}} {
		t.Run(c.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(),
				Tracing: telemetry.Config{Exporter: exp}, TraceStatusRatio: c.ratio}))
			ev := "polls" + c.name
			nodetest.CreateSale(t, n, ev, openSale(10, 1, 30*time.Minute, 0, 1000)) // starts in 30 minutes: every poll waits
			j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/"+ev+"/join", map[string]string{"X-User-ID": "carol"}, nil)
			if j.Status != http.StatusOK {
				t.Fatalf("join: %d %s", j.Status, j.Raw)
			}
			for range 20 {
				s := nodetest.Call(t, http.MethodGet, n.URL()+"/events/"+ev+"/status", map[string]string{"Authorization": "Bearer " + nodetest.Str(j.Body, "ticket")}, nil)
				if s.Status != http.StatusOK {
					t.Fatalf("status: %d %s", s.Status, s.Raw)
				}
			}
			polls := spansNamed(exp, "GET /events/:id/status")
			if len(polls) != c.want {
				t.Errorf("%d status polls traced of 20, want %d", len(polls), c.want)
			}
			for _, p := range polls {
				for _, s := range exp.GetSpans() {
					if s.Parent.SpanID() == p.SpanContext.SpanID() {
						t.Errorf("status poll span has child %q, want none", s.Name)
					}
				}
			}
			if got := len(spansNamed(exp, "POST /events/:id/join")); got != 1 {
				t.Errorf("%d join spans, want 1", got)
			}
		})
	}
}

// TestTracingOffExportsNothing: a node whose environment names no OTLP
// exporter makes no connection to one, and its order events carry no
// trace id; the same node with OTEL_EXPORTER_OTLP_ENDPOINT set posts its
// spans there, at the latest when it closes (the provider's shutdown
// flushes what the batcher still holds).
func TestTracingOffExportsNothing(t *testing.T) {
	r, ns := testenv.StartRedis(t), testenv.StartNATS(t)
	var posts atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && req.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(collector.Close)
	for _, c := range []struct {
		name string
		env  map[string]string
		on   bool
	}{
		{"off", map[string]string{"OTEL_SERVICE_NAME": "shop-queue"}, false},
		{"none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL}, false},
		{"on", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tc, err := telemetry.FromEnv(func(k string) string { return c.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			before := posts.Load()
			n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Tracing: tc}))
			id := claimOne(t, n, "export"+c.name, "dave", nil)
			traceID := grantedEvent(t, n, "export"+c.name, id).TraceID
			ctx, cancel := context.WithTimeout(context.Background(), nodetest.Patience)
			defer cancel()
			if err := n.Close(ctx); err != nil {
				t.Fatal(err)
			}
			got := posts.Load() - before
			if c.on && (got == 0 || traceID == "") {
				t.Errorf("tracing on: %d posts to the collector after close, order event trace_id %q; want spans exported and a trace id", got, traceID)
			}
			if !c.on && (got != 0 || traceID != "") {
				t.Errorf("tracing off: %d posts to the collector, order event trace_id %q; want none", got, traceID)
			}
		})
	}
}
