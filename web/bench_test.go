//go:build unix

package web

import (
	"bytes"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/tokens"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/gofiber/fiber/v2/middleware/requestid"
	"github.com/valyala/fasthttp"
)

// benchSales is a hand-written fake of the node's view, with a func field
// for each method the status path calls. The embedded interface stays nil:
// a call to any other method panics, which the benchmark would show.
type benchSales struct {
	sales
	get     func(id string) (*admission.Sale, bool)
	present func(ev string, pos int64)
}

func (f benchSales) Get(id string) (*admission.Sale, bool)                           { return f.get(id) }
func (f benchSales) PresentAfter(ev string, pos int64, _ time.Duration)              { f.present(ev, pos) }
func (f benchSales) ClaimedAfter(string, int64, time.Duration)                       {}
func (f benchSales) Held(string, int64) bool                                         { return false }
func (f benchSales) ShownETA(*admission.Sale, string, time.Time, admission.Decision) {}

// benchTickets is a hand-written fake of the ticket verifier that accepts
// one ticket without any cryptography, to show what verification costs.
type benchTickets struct {
	sign   func(t tokens.Ticket) (string, error)
	verify func(raw, event string) (tokens.Ticket, error)
}

func (f benchTickets) Sign(t tokens.Ticket) (string, error) { return f.sign(t) }
func (f benchTickets) Verify(raw, event string) (tokens.Ticket, error) {
	return f.verify(raw, event)
}

// benchSale is an open sale whose frontier is at frontier.
func benchSale(frontier float64) *admission.Sale {
	now := time.Now()
	return &admission.Sale{
		Config: event.Config{
			ID: "ev", Name: "bench", Supply: 1000, PerUserLimit: 1,
			PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour),
			Mode: event.FCFS, AdmitRatePerSecond: 100, AdmissionTTLSeconds: 120, Buckets: 1,
			// The per-ticket poll limit runs, as in production, with a
			// rate the benchmark's one ticket never reaches.
			Limits: event.Limits{Status: event.StatusBudget{Ticket: event.Rate{PerSecond: 1e12, Burst: 1e12}}},
		},
		Reading:   admission.Reading{Frontier: frontier, Joined: 10_000, WindowFrozen: true},
		Remaining: 1000,
		Rate:      100,
		Refreshed: now,
	}
}

// inMemory drives a fasthttp handler with one reused request, no network:
// what it measures is the framework plus the handler.
type inMemory struct {
	h   fasthttp.RequestHandler
	ctx fasthttp.RequestCtx
}

func newInMemory(h fasthttp.RequestHandler, path, authorization string) *inMemory {
	m := &inMemory{h: h}
	m.ctx.Request.Header.SetMethod(fiber.MethodGet)
	m.ctx.Request.SetRequestURI(path)
	m.ctx.Request.Header.Set(fiber.HeaderAuthorization, authorization)
	return m
}

// cpuTime is the CPU time (user + system) the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs m.do b.N times and reports, besides the wall-clock ns/op, the
// process CPU time per request (cpu-ns/op): other processes competing for
// the cores inflate the first, hardly the second.
func (m *inMemory) loop(b *testing.B) {
	b.ReportAllocs()
	start := cpuTime(b)
	for b.Loop() {
		m.do(b)
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

func (m *inMemory) do(b *testing.B) []byte {
	m.ctx.Response.Reset()
	m.ctx.ResetUserValues() // as fasthttp's server does after each request (a traced request's context)
	m.h(&m.ctx)
	if code := m.ctx.Response.StatusCode(); code != fiber.StatusOK {
		b.Fatalf("status %d: %s", code, m.ctx.Response.Body())
	}
	return m.ctx.Response.Body()
}

// BenchmarkStatus measures one whole GET /events/{id}/status handled
// in-process through the fiber app (routing, middleware, ticket
// verification, the admission decision, JSON), against a bare fiber app
// answering a constant on the same route.
//
//	go test -run '^$' -bench Status -benchmem ./web
func BenchmarkStatus(b *testing.B) {
	secret := bytes.Repeat([]byte{7}, 32)
	signed, err := tokens.NewTickets(secret)
	if err != nil {
		b.Fatal(err)
	}
	keys, err := tokens.OpenKeyDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ticket, err := signed.Sign(tokens.Ticket{Event: "ev", User: "alice", Seq: 5000, IssuedAt: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	const path = "/events/ev/status"
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	b.Run("fiber-constant", func(b *testing.B) {
		app := fiber.New(fiber.Config{DisableStartupMessage: true})
		body := []byte(`{"state":"waiting","position":5000,"ahead":4899,"eta_seconds":49,"poll_after_ms":12000}`)
		app.Get("/events/:id/status", func(c *fiber.Ctx) error {
			c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
			return c.Send(body)
		})
		newInMemory(app.Handler(), path, "Bearer "+ticket).loop(b)
	})
	b.Run("fiber-constant+middleware", func(b *testing.B) {
		app := fiber.New(fiber.Config{DisableStartupMessage: true})
		app.Use(recover.New())
		app.Use(requestid.New())
		body := []byte(`{"state":"waiting","position":5000,"ahead":4899,"eta_seconds":49,"poll_after_ms":12000}`)
		app.Get("/events/:id/status", func(c *fiber.Ctx) error {
			c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
			return c.Send(body)
		})
		newInMemory(app.Handler(), path, "Bearer "+ticket).loop(b)
	})
	fake := benchTickets{verify: func(raw, event string) (tokens.Ticket, error) {
		return tokens.Ticket{Event: event, User: "alice", Seq: 5000}, nil
	}}
	for _, tc := range []struct {
		name     string
		frontier float64
		tickets  tickets
		want     string
	}{
		{"status-waiting", 100, signed, `"state":"waiting"`},
		{"status-waiting-unverified-ticket", 100, fake, `"state":"waiting"`},
		{"status-admitted", 1e6, signed, `"admission_token":"`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			sale := benchSale(tc.frontier)
			app := mustNew(b, Config{Log: quiet}, Deps{
				Sales: benchSales{
					get:     func(id string) (*admission.Sale, bool) { return sale, id == "ev" },
					present: func(string, int64) {},
				},
				Tickets:  tc.tickets,
				Admitter: tokens.NewIssuer(keys, tokens.IssuerConfig{}),
			})
			m := newInMemory(app.Handler(), path, "Bearer "+ticket)
			if body := m.do(b); !bytes.Contains(body, []byte(tc.want)) {
				b.Fatalf("answer %s lacks %s", body, tc.want)
			}
			m.loop(b)
		})
	}
}
