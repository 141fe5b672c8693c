package node_test

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web/protect"
	"github.com/chromedp/chromedp"
)

// TestPoWAndInviteJoin: a proof-of-work event wants a solved challenge
// bound to the joiner; an invite-only event wants a signed invite for
// this user and event. Replays by the same user get the same ticket.
func TestPoWAndInviteJoin(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	secret := make([]byte, 32) // a node refuses a patterned secret
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TicketSecret: secret}))
	nodetest.CreateSale(t, n, "pow", limited(map[string]any{"pow": map[string]any{"enabled": true, "bits": 12}}))
	nodetest.CreateSale(t, n, "vip", limited(map[string]any{"invite_only": true}))

	ch := nodetest.Call(t, http.MethodGet, n.URL()+"/events/pow/challenge", map[string]string{"X-User-ID": "alice"}, nil)
	if ch.Status != http.StatusOK || ch.Body["required"] != true || ch.Body["bits"] != 12.0 {
		t.Fatalf("challenge: %d %s", ch.Status, ch.Raw)
	}
	solved := nodetest.Str(ch.Body, "challenge") + ":" + protect.SolvePoW(nodetest.Str(ch.Body, "challenge"), 12)
	inv, err := tokens.NewInvites(secret)
	if err != nil {
		t.Fatal(err)
	}
	invite := inv.Sign("vip", "alice", time.Now().Add(time.Hour))
	otherEvent := inv.Sign("pow", "alice", time.Now().Add(time.Hour))
	var tickets []string
	for i, s := range []struct {
		ev, user, header, value string
		status                  int
		code                    string
	}{
		{"pow", "alice", "X-PoW", "", 403, "pow_required"},
		{"pow", "bob", "X-PoW", solved, 403, "pow_required"},
		{"pow", "alice", "X-PoW", solved, 200, ""},
		{"vip", "alice", "X-Invite-Token", "", 403, "invite_required"},
		{"vip", "alice", "X-Invite-Token", otherEvent, 403, "invite_required"},
		{"vip", "bob", "X-Invite-Token", invite, 403, "invite_required"},
		{"vip", "alice", "X-Invite-Token", invite, 200, ""},
		{"vip", "alice", "X-Invite-Token", invite, 200, ""},
	} {
		a := join(t, n, s.ev, map[string]string{"X-User-ID": s.user, s.header: s.value})
		if a.Status != s.status || nodetest.Str(a.Body, "code") != s.code {
			t.Fatalf("step %d: %s joins %s: %d %s, want %d %s", i, s.user, s.ev, a.Status, a.Raw, s.status, s.code)
		}
		if s.ev == "vip" && s.status == 200 {
			tickets = append(tickets, nodetest.Str(a.Body, "ticket"))
		}
	}
	if tickets[0] != tickets[1] {
		t.Errorf("a replayed invite gave a second ticket")
	}
}

// TestPoWSolverInChromium runs assets/pow.js in headless Chromium at the
// default difficulty (15 bits), joins with its answer, and logs how long
// the browser took. It skips without Chromium, except under CI=true.
func TestPoWSolverInChromium(t *testing.T) {
	chromium := testenv.Binary(t, "chromium")
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "pow", limited(map[string]any{"pow": map[string]any{"enabled": true}}))
	resp, err := http.Get(n.URL() + "/assets/pow.js")
	if err != nil {
		t.Fatal(err)
	}
	src, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(chromium), chromedp.UserDataDir(t.TempDir()), chromedp.Env("TMPDIR=" + t.TempDir())} // Chromium's temporary files too
	for _, f := range []string{"headless", "no-sandbox", "disable-gpu", "no-first-run", "disable-background-networking", "disable-dev-shm-usage"} {
		opts = append(opts, chromedp.Flag(f, true))
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelT()
	if err := chromedp.Do(ctx, chromedp.Navigate(n.URL()+"/events/pow")); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](string(src)+";true")); err != nil {
		t.Fatalf("load pow.js: %v", err)
	}
	for i, user := range []string{"carol", "dave", "erin"} {
		type result struct {
			H  string  `json:"h"`
			Ms float64 `json:"ms"`
		}
		js := `(async () => { const t0 = performance.now();
			const h = await anteroomPoW.header("/events/pow", {"X-User-ID": "` + user + `"});
			return {h: h, ms: performance.now() - t0}; })()`
		out, err := chromedp.Run(ctx, chromedp.Evaluate[result](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("solve: %v", err)
		}
		_, nonce, _ := strings.Cut(out.H, ":")
		hashes, _ := strconv.Atoi(nonce)
		t.Logf("solve %d in Chromium at 15 bits: %d hashes in %.0f ms (%.0f hashes/s)", i+1, hashes+1, out.Ms, float64(hashes+1)/out.Ms*1000)
		if a := join(t, n, "pow", map[string]string{"X-User-ID": user, "X-PoW": out.H}); a.Status != http.StatusOK {
			t.Fatalf("join with the browser's answer %q: %d %s", out.H, a.Status, a.Raw)
		}
	}
}
