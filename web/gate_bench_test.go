package web

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web/shopper"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// gateSales serves one sale, "ev", to the gate; any other method panics.
type gateSales struct {
	sales
	sale *admission.Sale
}

func (g gateSales) Get(id string) (*admission.Sale, bool) { return g.sale, id == g.sale.Config.ID }

// BenchmarkGate measures one whole GET /events/{id}/gate with a valid
// admission cookie, in-process through the fiber app (routing, middleware,
// Ed25519 verification): the cost nginx's auth_request adds to each shop
// request on the anteroom side. No Redis: the gate has no store.
//
//	go test -run '^$' -bench Gate -benchmem ./web
func BenchmarkGate(b *testing.B) {
	keys, err := tokens.OpenKeyDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	issuer := tokens.NewIssuer(keys, tokens.IssuerConfig{})
	tok, _, err := issuer.Issue("ev", "alice", 1, time.Hour, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	sale := &admission.Sale{Config: event.Config{ID: "ev", Name: "bench", Supply: 1, PerUserLimit: 1,
		PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour)}}
	app := mustNew(b, Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, Deps{Sales: gateSales{sale: sale}, Admitter: issuer})
	h := app.Handler()
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(fiber.MethodGet)
	ctx.Request.SetRequestURI("/events/ev/gate")
	ctx.Request.Header.SetCookie(shopper.AdmissionCookie("ev"), tok)
	b.ReportAllocs()
	for b.Loop() {
		ctx.Response.Reset()
		h(&ctx)
		if ctx.Response.StatusCode() != fiber.StatusNoContent || string(ctx.Response.Header.Peek(shopper.GateUserHeader)) != "alice" {
			b.Fatalf("gate: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}
