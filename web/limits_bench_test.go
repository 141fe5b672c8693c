package web

import (
	"context"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/limit"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// BenchmarkRejected measures one rejected request handled in-process by
// the whole fiber app (routing, middleware, the limit, the problem+json
// answer), no network: a join refused by its Redis token bucket on a real
// redis-server (one round trip), the same refused by a degraded limiter's
// node-local bucket, a status poll refused by its node-local bucket, and
// an early bird refused before any limit.
//
//	go test -run '^$' -bench Rejected -benchmem ./web
func BenchmarkRejected(b *testing.B) {
	r := testenv.StartRedis(b)
	tight := event.Limits{}
	tight.Join.User = event.Rate{PerSecond: 1e-6, Burst: 1}
	tight.Status.Ticket = event.Rate{PerSecond: 1e-6, Burst: 1}
	newLimiter := func(b *testing.B) *limit.Limiter {
		rdb, err := limit.ClientFor(r.Client(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = rdb.Close() })
		return limit.New(rdb, limit.Config{SlowAfter: time.Minute, ProbeFraction: 1e-9})
	}
	run := func(b *testing.B, app *fiber.App, method, path string, want int) {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(method)
		ctx.Request.SetRequestURI(path)
		ctx.Request.Header.Set("X-User-ID", "bot")
		ctx.Request.Header.Set(fiber.HeaderAuthorization, "Bearer some.ticket.value")
		h := app.Handler()
		h(&ctx) // spends the burst
		b.ReportAllocs()
		for b.Loop() {
			ctx.Response.Reset()
			h(&ctx)
			if code := ctx.Response.StatusCode(); code != want {
				b.Fatalf("status %d, want %d: %s", code, want, ctx.Response.Body())
			}
		}
	}
	b.Run("join-429-redis", func(b *testing.B) {
		app := limApp(b, Config{}, limSale(tight), Deps{Limiter: newLimiter(b)})
		run(b, app, "POST", "/events/ev/join", 429)
	})
	b.Run("join-429-degraded", func(b *testing.B) {
		l := newLimiter(b)
		hb := l.NewHeartbeat("bench", time.Hour)
		r.Stop(b)
		_ = hb.Beat(context.Background()) // fails: degraded
		if !l.Degraded() {
			b.Fatal("not degraded")
		}
		app := limApp(b, Config{}, limSale(tight), Deps{Limiter: l})
		run(b, app, "POST", "/events/ev/join", 429)
		r.Restart(b)
	})
	b.Run("status-429-local", func(b *testing.B) {
		app := limApp(b, Config{}, limSale(tight), Deps{})
		run(b, app, "GET", "/events/ev/status", 429)
	})
	b.Run("join-403-early-bird", func(b *testing.B) {
		sale := limSale(tight)
		sale.Config.PrequeueOpensAt = time.Now().Add(time.Hour)
		app := limApp(b, Config{}, sale, Deps{Limiter: newLimiter(b)})
		run(b, app, "POST", "/events/ev/join", 403)
	})
}
