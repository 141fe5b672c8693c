//go:build unix && !race

package web

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/anteroom/anteroom/tokens"
	"github.com/gofiber/fiber/v2"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestHotPathAllocs bounds what a waiting user's status poll and a new
// user's join allocate in the app wired as the node wires it (the profiles
// of issue 14: each allocation is garbage the collector pays for under
// load). It counts allocations, not time. Before the work on it a status
// poll allocated 7 times (then 1, until its position stayed on the stack)
// and a join 24. Not under -race, whose instrumentation allocates on its
// own.
func TestHotPathAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	app, signed := nodeApp(t)
	// Tracing on, the poll passed over by the ratio: still no allocation.
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	traced, _ := nodeApp(t, func(c *Config) { c.Tracer, c.TraceStatusRatio = tp, 0 })
	h := app.Handler()
	ticket, err := signed.Sign(tokens.Ticket{Event: "ev", User: "alice", Seq: 5000, IssuedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	status := newInMemory(h, "/events/ev/status", "Bearer "+ticket)
	statusTracing := newInMemory(traced.Handler(), "/events/ev/status", "Bearer "+ticket)
	join := newInMemory(h, "/events/ev/join", "")
	join.ctx.Request.Header.SetMethod(fiber.MethodPost)
	n := 0
	var user []byte
	for _, tc := range []struct {
		name string
		max  float64
		run  func() []byte
		want string
	}{
		{"status", 0, func() []byte { return status.once() }, `"state":"waiting"`},
		{"status, tracing on, poll not sampled", 0, func() []byte { return statusTracing.once() }, `"state":"waiting"`},
		{"join", 10, func() []byte {
			n++
			user = strconv.AppendInt(append(user[:0], 'u'), int64(n), 10)
			join.ctx.Request.Header.SetBytesV("X-User-ID", user)
			return join.once()
		}, `"ticket":"`},
	} {
		if body := tc.run(); !bytes.Contains(body, []byte(tc.want)) {
			t.Fatalf("%s: answer %s", tc.name, body)
		}
		if got := testing.AllocsPerRun(200, func() { tc.run() }); got > tc.max {
			t.Errorf("%s allocates %.0f times a request, want at most %.0f", tc.name, got, tc.max)
		}
	}
}

// once serves the request once and returns the body (any status).
func (m *inMemory) once() []byte {
	m.ctx.Response.Reset()
	m.ctx.ResetUserValues() // as fasthttp's server does after each request
	m.h(&m.ctx)
	return m.ctx.Response.Body()
}
