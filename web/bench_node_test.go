//go:build unix

package web

import (
	"bytes"
	"context"
	"github.com/anteroom/anteroom/web/protect"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/metrics"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/tokens"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// benchJoiner hands out sequence numbers from memory: what BenchmarkNode's
// join measures is everything but the Redis round trip.
type benchJoiner struct{ seq atomic.Int64 }

func (j *benchJoiner) Join(_ context.Context, _, _ string, _ queue.Times) (queue.Entry, error) {
	return queue.Entry{Seq: j.seq.Add(1), JoinedAt: time.Now()}, nil
}

// nodeApp is the app wired as internal/node wires it, with a waiting sale
// "ev"; it returns the ticket signer too.
func nodeApp(tb testing.TB, with ...func(*Config)) (*fiber.App, *tokens.Tickets) {
	tb.Helper()
	signed, err := tokens.NewTickets(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		tb.Fatal(err)
	}
	keys, err := tokens.OpenKeyDir(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	m, err := metrics.New(prometheus.NewRegistry(), metrics.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	// fasthttp's in-memory RequestCtx has the peer 0.0.0.0: the gateway.
	identity, err := protect.NewHeaderIdentity("X-User-ID", []string{"0.0.0.0"})
	if err != nil {
		tb.Fatal(err)
	}
	sale := benchSale(100)
	sale.Config.Limits.Defaults()
	cfg := Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), TrustedProxies: []string{"0.0.0.0"}}
	for _, f := range with {
		f(&cfg)
	}
	app := mustNew(tb, cfg, Deps{
		Sales: benchSales{
			get:     func(id string) (*admission.Sale, bool) { return sale, id == "ev" },
			present: func(string, int64) {},
		},
		Joiner:   &benchJoiner{},
		Tickets:  protect.NewTicketCache(signed, 200_000),
		Admitter: tokens.NewIssuer(keys, tokens.IssuerConfig{}),
		Identity: identity,
		Observe:  Observe{Request: m.ObserveRequest, TokenIssued: m.TokenIssued},
	})
	return app, signed
}

// BenchmarkNode measures status and join through the app wired as
// internal/node wires it (ticket cache, Prometheus request histogram,
// header identity from a trusted proxy, the events' default limits), in
// process, no network and no Redis (the join sequence comes from memory).
// With -cpuprofile and -memprofile it shows where a request's own time
// goes:
//
//	go test -run '^$' -bench Node -benchmem -cpuprofile cpu.out -memprofile mem.out ./web
//
// The status-waiting-tracing-* runs turn tracing on (an SDK provider
// recording spans, exporting nowhere): a poll the ratio passes over
// (sampled-out), and one traced every time (traced).
func BenchmarkNode(b *testing.B) {
	app, signed := nodeApp(b)
	statusWaiting := func(app *fiber.App) func(b *testing.B) {
		return func(b *testing.B) {
			ticket, err := signed.Sign(tokens.Ticket{Event: "ev", User: "alice", Seq: 5000, IssuedAt: time.Now()})
			if err != nil {
				b.Fatal(err)
			}
			mem := newInMemory(app.Handler(), "/events/ev/status", "Bearer "+ticket)
			if body := mem.do(b); !bytes.Contains(body, []byte(`"state":"waiting"`)) {
				b.Fatalf("answer %s", body)
			}
			mem.loop(b)
		}
	}
	b.Run("status-waiting", statusWaiting(app))
	for _, tc := range []struct {
		name  string
		ratio float64
	}{{"sampled-out", 0}, {"traced", 1}} {
		tp := sdktrace.NewTracerProvider()
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		traced, _ := nodeApp(b, func(c *Config) { c.Tracer, c.TraceStatusRatio = tp, tc.ratio })
		b.Run("status-waiting-tracing-"+tc.name, statusWaiting(traced))
	}
	b.Run("status-crowd", func(b *testing.B) {
		// 20,000 waiting users polling in turn, as in the wrk run: the
		// ticket cache and the poll budgets are mostly out of the CPU's
		// caches, which one ticket polled over and over never shows.
		auth := make([][]byte, 20_000)
		for i := range auth {
			ticket, err := signed.Sign(tokens.Ticket{Event: "ev", User: "crowd" + strconv.Itoa(i), Seq: 5000 + int64(i), IssuedAt: time.Now()})
			if err != nil {
				b.Fatal(err)
			}
			auth[i] = []byte("Bearer " + ticket)
		}
		mem := newInMemory(app.Handler(), "/events/ev/status", "")
		for _, a := range auth { // each ticket verified once, before the clock runs
			mem.ctx.Request.Header.SetBytesV(fiber.HeaderAuthorization, a)
			mem.do(b)
		}
		b.ReportAllocs()
		start := cpuTime(b)
		n := 0
		for b.Loop() {
			mem.ctx.Request.Header.SetBytesV(fiber.HeaderAuthorization, auth[n%len(auth)])
			n++
			mem.do(b)
		}
		b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
	})
	b.Run("join", func(b *testing.B) {
		mem := newInMemory(app.Handler(), "/events/ev/join", "")
		mem.ctx.Request.Header.SetMethod(fiber.MethodPost)
		var buf []byte
		n := 0
		b.ReportAllocs()
		start := cpuTime(b)
		for b.Loop() {
			n++ // a new user each time, as in the wrk run
			buf = strconv.AppendInt(append(buf[:0], 'u'), int64(n), 10)
			mem.ctx.Request.Header.SetBytesV("X-User-ID", buf)
			if body := mem.do(b); !bytes.Contains(body, []byte(`"ticket":"`)) {
				b.Fatalf("answer %s", body)
			}
		}
		b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
	})
}
