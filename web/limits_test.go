package web

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/anteroom/anteroom/web/protect"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/anteroom/anteroom/web/staffapi"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Hand-written fakes for the edge-limit tests: one func field per method
// the tested paths call; the embedded interfaces stay nil.
type (
	limSales struct {
		sales
		sale *admission.Sale
	}
	limJoiner struct {
		join func(ctx context.Context, ev, user string) (queue.Entry, error)
	}
	limLimiter struct {
		allow func(rules []limit.Rule) limit.Decision
	}
)

func (f limSales) Get(id string) (*admission.Sale, bool)     { return f.sale, id == f.sale.Config.ID }
func (f limSales) PresentAfter(string, int64, time.Duration) {}
func (f limSales) ClaimedAfter(string, int64, time.Duration) {}
func (f limJoiner) Join(ctx context.Context, ev, user string, _ queue.Times) (queue.Entry, error) {
	return f.join(ctx, ev, user)
}
func (f limLimiter) Allow(_ context.Context, rules ...limit.Rule) limit.Decision {
	return f.allow(rules)
}

var limSecret = bytes.Repeat([]byte{9}, 32)

// limSale is an open sale "ev" with the given limits (defaults filled).
func limSale(l event.Limits) *admission.Sale {
	now := time.Now()
	c := event.Config{
		ID: "ev", Supply: 10, StartsAt: now.Add(-time.Minute), PrequeueOpensAt: now.Add(-time.Hour),
		EndsAt: now.Add(time.Hour), Limits: l,
	}
	c.Defaults()
	return &admission.Sale{Config: c, Refreshed: now}
}

// limApp builds the app with fakes; join answers seq 1 unless set.
func limApp(t testing.TB, cfg Config, sale *admission.Sale, d Deps) *fiber.App {
	t.Helper()
	tickets, err := tokens.NewTickets(limSecret)
	if err != nil {
		t.Fatal(err)
	}
	if d.Identity == nil {
		id, err := protect.NewHeaderIdentity("", []string{"0.0.0.0"}) // app.Test's peer plays the gateway
		if err != nil {
			t.Fatal(err)
		}
		d.Identity = id
	}
	d.Sales, d.Tickets, d.EdgeSecret = limSales{sale: sale}, tickets, limSecret
	if d.Joiner == nil {
		d.Joiner = limJoiner{join: func(context.Context, string, string) (queue.Entry, error) {
			return queue.Entry{Seq: 1, JoinedAt: time.Now().Truncate(time.Second)}, nil
		}}
	}
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	return mustNew(t, cfg, d)
}

type limAnswer struct {
	status int
	header http.Header
	body   map[string]any
}

func limDo(t testing.TB, app *fiber.App, method, path string, hdr map[string]string, body []byte) limAnswer {
	t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return limDoRequest(t, app, req)
}

// newLimRequest is a request with headers hdr and no body.
func newLimRequest(method, path string, hdr map[string]string) *http.Request {
	req := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req
}

// limSaleOf is the open sale of configuration cfg.
func limSaleOf(cfg *event.Config) *admission.Sale {
	return &admission.Sale{Config: *cfg, Refreshed: time.Now()}
}

func limDoRequest(t testing.TB, app *fiber.App, req *http.Request) limAnswer {
	t.Helper()
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := limAnswer{status: resp.StatusCode, header: resp.Header}
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &a.body)
	return a
}

func (a limAnswer) code() string { s, _ := a.body["code"].(string); return s }

// TestEntryCap holds MaxInFlight joins inside the handler: the next request
// is answered 503 degraded with Retry-After, /healthz still answers, and
// once the held ones finish requests pass again.
func TestEntryCap(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	app := limApp(t, Config{MaxInFlight: 2}, limSale(event.Limits{}), Deps{Joiner: limJoiner{
		join: func(context.Context, string, string) (queue.Entry, error) {
			entered <- struct{}{}
			<-release
			return queue.Entry{Seq: 1}, nil
		},
	}})
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := limDo(t, app, "POST", "/events/ev/join", map[string]string{"X-User-ID": "held" + string(rune('a'+i))}, nil)
			if a.status != 200 {
				t.Errorf("held join: %d %v", a.status, a.body)
			}
		}()
	}
	<-entered
	<-entered
	a := limDo(t, app, "GET", "/events/ev", nil, nil)
	if a.status != 503 || a.code() != "degraded" || a.header.Get("Retry-After") != "1" {
		t.Fatalf("over the cap: %d %v Retry-After %q, want 503 degraded with Retry-After 1", a.status, a.body, a.header.Get("Retry-After"))
	}
	if a := limDo(t, app, "GET", "/healthz", nil, nil); a.status != 200 {
		t.Fatalf("healthz over the cap: %d", a.status)
	}
	close(release)
	wg.Wait()
	if a := limDo(t, app, "GET", "/events/ev", nil, nil); a.status != 200 {
		t.Fatalf("after the held requests: %d %v", a.status, a.body)
	}
}

// TestBodyLimitOnEveryRoute sends a body over 16 KB to every route the app
// has, whatever its method: each is refused 413 too_large before any
// handler runs; the list upload, the one route with its own limit
// (TestListUploadLimit), sent the same body, reaches its handler. Each
// body goes once with its length and once chunked.
func TestBodyLimitOnEveryRoute(t *testing.T) {
	app := limApp(t, Config{AdminToken: "admin-token-0123456789"}, limSale(event.Limits{}), Deps{})
	// Over a socket: app.Test reports the oversized body as its own error.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	big := bytes.Repeat([]byte("x"), BodyLimit+1)
	n, uploads := 0, 0
	for _, r := range app.GetRoutes(true) {
		if r.Method == "HEAD" || r.Method == "CONNECT" || r.Method == "TRACE" {
			continue
		}
		path := strings.NewReplacer(":id", "ev", ":claim_id", "c1", ":name", "l1", "*", "x").Replace(r.Path)
		upload := staffapi.StreamsBody(r.Method, path)
		for _, chunked := range []bool{false, true} {
			var body io.Reader = bytes.NewReader(big)
			if chunked {
				body = io.MultiReader(bytes.NewReader(big)) // no length: sent chunked
			}
			req, _ := http.NewRequest(r.Method, "http://"+ln.Addr().String()+path, body)
			req.Header.Set("Authorization", "Bearer admin-token-0123456789")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", r.Method, path, err)
			}
			a := limAnswer{status: resp.StatusCode}
			_ = json.NewDecoder(resp.Body).Decode(&a.body)
			resp.Body.Close()
			switch {
			case upload && a.code() == "too_large":
				t.Errorf("%s %s (chunked %v) with %d bytes: 413, want the upload's handler (its own limit)", r.Method, path, chunked, len(big))
			case !upload && (a.status != 413 || a.code() != "too_large"):
				t.Errorf("%s %s (chunked %v) with %d bytes: %d %v, want 413 too_large", r.Method, path, chunked, len(big), a.status, a.body)
			}
		}
		n++
		uploads += bool2int(upload)
	}
	if uploads != 1 {
		t.Errorf("%d list upload routes, want 1 (POST /admin/lists/:name/entries)", uploads)
	}
	t.Logf("%d routes checked", n)
}

func bool2int(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRateLimitedAnswer checks the rules a join sends to the limiter and
// the honest 429 it turns a refusal into.
func TestRateLimitedAnswer(t *testing.T) {
	var got []limit.Rule
	deny := limLimiter{allow: func(rules []limit.Rule) limit.Decision {
		got = append([]limit.Rule(nil), rules...)
		return limit.Decision{Dim: limit.Device, RetryAfter: 2500 * time.Millisecond}
	}}
	l := event.Limits{}
	l.Join.IP = event.Rate{PerSecond: 3}
	l.Join.User = event.Rate{PerSecond: 1, Burst: 5}
	// app.Test's peer (0.0.0.0) plays the gateway, whose X-Device-ID is
	// the sale's device signal: its keyed hash keys the device budget.
	sale := limSale(l)
	sale.Config.Signals.Device = &event.SignalSource{Source: event.SourceProxyHeader}
	app := limApp(t, Config{GlobalJoin: limit.Limit{Rate: 50}, TrustedProxies: []string{"0.0.0.0"}}, sale, Deps{Limiter: deny})
	a := limDo(t, app, "POST", "/events/ev/join", map[string]string{"X-User-ID": "alice", protect.DeviceHeader: "dev-1"}, nil)
	if a.status != 429 || a.code() != "rate_limited" || a.header.Get("Retry-After") != "3" || !strings.Contains(a.body["detail"].(string), "device") {
		t.Fatalf("got %d %v Retry-After %q, want 429 rate_limited naming the device with Retry-After 3", a.status, a.body, a.header.Get("Retry-After"))
	}
	want := map[limit.Dim]limit.Rule{
		limit.Global: {Budget: "join", Dim: limit.Global, Limit: limit.Limit{Rate: 50}},
		limit.Event:  {Budget: "join", Dim: limit.Event, Event: "ev"},
		limit.User:   {Budget: "join", Dim: limit.User, Event: "ev", Value: "alice", Limit: limit.Limit{Rate: 1, Burst: 5}},
		limit.IP:     {Budget: "join", Dim: limit.IP, Event: "ev", Value: "0.0.0.0", Limit: limit.Limit{Rate: 3, Burst: 3}},
		limit.Device: {Budget: "join", Dim: limit.Device, Event: "ev", Limit: limit.Limit{Rate: 1, Burst: 5}},
	}
	if len(got) != len(want) {
		t.Fatalf("rules %+v, want %d", got, len(want))
	}
	for _, r := range got {
		if r.Dim == limit.Device {
			if !hashPattern.MatchString(r.Value) {
				t.Errorf("the device budget is keyed %q, want the device signal's keyed hash", r.Value)
			}
			r.Value = ""
		}
		if r != want[r.Dim] {
			t.Errorf("rule %+v, want %+v", r, want[r.Dim])
		}
	}
	a = limDo(t, app, "POST", "/events/ev/join", map[string]string{"X-User-ID": "alice", protect.DeviceHeader: "bad device"}, nil)
	if a.status != 400 || a.code() != "bad_request" {
		t.Fatalf("bad device id: %d %v, want 400", a.status, a.body)
	}
}

// TestClientIP: X-Forwarded-For counts only from trusted proxies, and then
// only its rightmost entry that is not a trusted proxy.
func TestClientIP(t *testing.T) {
	p, bad := kit.ParseProxies([]string{"10.0.0.0/8", "192.0.2.1", " ", "::1"})
	if bad != "" {
		t.Fatal(bad)
	}
	if err := ValidTrustedProxies([]string{"10.0.0.0/8", "proxy.example"}); err == nil {
		t.Fatal("a host name passed as a trusted proxy")
	}
	app := fiber.New()
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString(p.ClientIP(c)) })
	h := app.Handler()
	cases := []struct{ peer, xff, want string }{
		{"203.0.113.9", "", "203.0.113.9"},
		{"203.0.113.9", "1.2.3.4", "203.0.113.9"},             // untrusted peer: header ignored
		{"192.0.2.1", "1.2.3.4", "1.2.3.4"},                   // trusted proxy
		{"192.0.2.1", "6.6.6.6, 1.2.3.4", "1.2.3.4"},          // forged entry left of the real one
		{"10.1.2.3", "6.6.6.6, 1.2.3.4, 10.9.9.9", "1.2.3.4"}, // two trusted hops
		{"192.0.2.1", "10.0.0.1, 10.0.0.2", "10.0.0.1"},       // all trusted: the leftmost hop
		{"192.0.2.1", "garbage, 1.2.3.4", "1.2.3.4"},
		{"192.0.2.1", "1.2.3.4, garbage", "192.0.2.1"}, // unreadable: stop at the proxy
		{"192.0.2.1", "[2001:db8::7]:443", "2001:db8::7"},
		{"::1", "2001:db8::1", "2001:db8::1"},
		{"::ffff:192.0.2.1", "1.2.3.4", "1.2.3.4"},
	}
	for _, tc := range cases {
		var ctx fasthttp.RequestCtx
		var req fasthttp.Request
		req.SetRequestURI("/")
		if tc.xff != "" {
			req.Header.Set(fiber.HeaderXForwardedFor, tc.xff)
		}
		ctx.Init(&req, &net.TCPAddr{IP: net.ParseIP(tc.peer), Port: 5000}, nil)
		h(&ctx)
		if got := string(ctx.Response.Body()); got != tc.want {
			t.Errorf("peer %s X-Forwarded-For %q: got %s, want %s", tc.peer, tc.xff, got, tc.want)
		}
	}
}
