package node_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/web/protect"
)

// A busy network on a real node (Redis, NATS, the node's CEL rules):
// joins from one address beyond its per-IP budget answer 429, unless a
// rule challenges a busy network (busy_network()); then they are asked
// for a proof of work, and a solved one joins within limits.busy_network.

// busyBits is the tests' proof-of-work difficulty: quick to solve.
const busyBits = 8

// busyNode starts a node in header mode whose loopback gateway names
// the client's address in X-Forwarded-For.
func busyNode(t *testing.T) (*node.Node, *testenv.Redis) {
	t.Helper()
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	return nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TicketSecret: secret})), r
}

// busySale is an open sale whose joins are limited per address to ipBurst
// (and per event to eventBurst, 0 for none), with busy, the ceiling of
// challenged joins, and rules.
func busySale(ipBurst, eventBurst int, busy map[string]any, rules ...map[string]string) map[string]any {
	join := map[string]any{"user": map[string]any{"per_second": -1}, "ip": rate(ipBurst)}
	if eventBurst > 0 {
		join["event"] = rate(eventBurst)
	}
	limits := map[string]any{"join": join, "pow": map[string]any{"bits": busyBits}}
	if busy != nil {
		limits["busy_network"] = busy
	}
	s := limited(limits)
	if len(rules) > 0 {
		s["door"] = map[string]any{"rules": rules}
	}
	return s
}

// carrierNAT is the rule of the issue: a busy network is challenged.
var carrierNAT = map[string]string{"name": "carrier-nat", "when": "busy_network()", "then": "challenge"}

// from names user joining from address ip through the gateway.
func from(u, ip string) map[string]string {
	return map[string]string{"X-User-ID": u, "X-Forwarded-For": ip}
}

// solve fetches a challenge of ev for u at ip and solves it: the X-PoW
// value.
func solve(t *testing.T, n *node.Node, ev, u, ip string) string {
	t.Helper()
	ch := nodetest.Call(t, http.MethodGet, n.URL()+"/events/"+ev+"/challenge", from(u, ip), nil)
	c := nodetest.Str(ch.Body, "challenge")
	if ch.Status != http.StatusOK || ch.Body["required"] != true || c == "" {
		t.Fatalf("challenge of %s for %s: %d %s", ev, u, ch.Status, ch.Raw)
	}
	return c + ":" + protect.SolvePoW(c, busyBits)
}

// wantCode checks a problem's status and code.
func wantCode(t *testing.T, what string, a nodetest.Answer, status int, code string) {
	t.Helper()
	if a.Status != status || nodetest.Str(a.Body, "code") != code {
		t.Fatalf("%s: %d %s, want %d %s", what, a.Status, a.Raw, status, code)
	}
}

// wantJoined checks a join's 200 with a ticket.
func wantJoined(t *testing.T, what string, a nodetest.Answer) {
	t.Helper()
	if a.Status != http.StatusOK || nodetest.Str(a.Body, "ticket") == "" {
		t.Fatalf("%s: %d %s, want 200 with a ticket", what, a.Status, a.Raw)
	}
}

// TestBusyNetworkChallenge: from one address, joins past its per-IP
// budget are 429 in a sale without the rule. With it they are asked for
// a proof of work (403 pow_required), and a solved one joins; a forged
// solution, another user's and a replay of a spent one (the same user's
// included) are refused 403 pow_required without spending the ceiling;
// the ceiling (limits.busy_network) holds, 429 past it; another address
// keeps its own budget; nothing refused took a place.
func TestBusyNetworkChallenge(t *testing.T) {
	n, r := busyNode(t)
	nat := "100.64.0.7"
	nodetest.CreateSale(t, n, "plain", busySale(2, 0, nil))
	nodetest.CreateSale(t, n, "nat", busySale(2, 0, map[string]any{"per_second": 0.001, "burst": 3}, carrierNAT))

	for _, u := range []string{"p1", "p2"} {
		wantJoined(t, "plain: "+u, join(t, n, "plain", from(u, nat)))
	}
	wantRateLimited(t, join(t, n, "plain", from("p3", nat)), "join requests per ip")
	// A solution changes nothing where no rule challenges a busy network.
	wantRateLimited(t, join(t, n, "plain", with(from("p3", nat), "X-PoW", "p1.plain.1.8.00.x:1")), "join requests per ip")

	for _, u := range []string{"a1", "a2"} {
		wantJoined(t, "nat: "+u+" within the budget, unchallenged", join(t, n, "nat", from(u, nat)))
	}
	wantCode(t, "a3 over the budget", join(t, n, "nat", from("a3", nat)), http.StatusForbidden, "pow_required")
	a3 := solve(t, n, "nat", "a3", nat)
	wantJoined(t, "a3 solved", join(t, n, "nat", with(from("a3", nat), "X-PoW", a3)))

	// Refused solutions spend no ceiling: three more solved joins fit.
	challenge, _, _ := strings.Cut(a3, ":")
	f := strings.Split(challenge, ".")
	for _, c := range []struct{ what, user, pow string }{
		{"a replay of a3's spent solution", "a3", a3},
		{"a3's solution for a4", "a4", a3},
		{"a forged mac", "a4", strings.Join(append(f[:5:5], "AAAAAAAAAAAAAAAAAAAAAA"), ".") + ":1"},
		{"a forged expiry", "a3", strings.Join([]string{f[0], f[1], "9999999999", f[3], f[4], f[5]}, ".") + ":1"},
		{"an unsolved challenge", "a5", strings.Split(solve(t, n, "nat", "a5", nat), ":")[0] + ":x"},
		{"garbage", "a5", "garbage"},
	} {
		wantCode(t, c.what, join(t, n, "nat", with(from(c.user, nat), "X-PoW", c.pow)), http.StatusForbidden, "pow_required")
	}
	for _, u := range []string{"a4", "a5"} {
		wantJoined(t, u+" solved", join(t, n, "nat", with(from(u, nat), "X-PoW", solve(t, n, "nat", u, nat))))
	}
	wantRateLimited(t, join(t, n, "nat", with(from("a6", nat), "X-PoW", solve(t, n, "nat", "a6", nat))), "challenged join requests per ip")
	wantJoined(t, "another address", join(t, n, "nat", from("b1", "100.64.0.8")))

	rdb := r.Client(t)
	for ev, want := range map[string]int64{"plain": 2, "nat": 6} { // a1 a2 a3 a4 a5 b1
		if seq, _ := rdb.Get(context.Background(), queue.KeysFor(ev).Seq).Int64(); seq != want {
			t.Errorf("%s handed out %d places, want %d", ev, seq, want)
		}
	}
}

// TestBusyNetworkSharedBudgets: a solved challenge still spends the
// sale's event budget, and a rule that challenges only some busy networks
// leaves the others' 429.
func TestBusyNetworkSharedBudgets(t *testing.T) {
	n, _ := busyNode(t)
	cgnat := map[string]string{"name": "cgnat", "when": `busy_network() && in_network(request.ip, "100.64.0.0/10")`, "then": "challenge"}
	nodetest.CreateSale(t, n, "ev", busySale(1, 2, nil, cgnat)) // default ceiling: ten times join.ip
	nat, home := "100.64.9.9", "198.51.100.4"
	wantJoined(t, "v1", join(t, n, "ev", from("v1", nat)))
	wantJoined(t, "v2 solved", join(t, n, "ev", with(from("v2", nat), "X-PoW", solve(t, n, "ev", "v2", nat))))
	wantRateLimited(t, join(t, n, "ev", with(from("v3", nat), "X-PoW", solve(t, n, "ev", "v3", nat))), "join requests per event")

	nodetest.CreateSale(t, n, "ev2", busySale(1, 0, nil, cgnat))
	wantJoined(t, "h1", join(t, n, "ev2", from("h1", home)))
	wantRateLimited(t, join(t, n, "ev2", with(from("h2", home), "X-PoW", solve(t, n, "ev2", "h2", home))), "join requests per ip")
}

// TestBusyNetworkBadInput: busy_network() in a rule whose then is not
// challenge, a misspelt or misused one, and a ceiling turned off are
// refused 400 at save, naming the rule and the column (or the field);
// nothing is saved.
func TestBusyNetworkBadInput(t *testing.T) {
	n, _ := busyNode(t)
	put := func(s map[string]any) nodetest.Answer {
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/bad", map[string]string{"Authorization": "Bearer " + n.AdminToken}, raw)
	}
	for _, c := range []struct {
		rule   map[string]string
		detail string
	}{
		{map[string]string{"name": "nat-block", "when": "busy_network()", "then": "block"}, `rule "nat-block", line 1, column 13`},
		{map[string]string{"name": "nat-bypass", "when": `request.method == "POST" && !busy_network()`, "then": "bypass"}, `rule "nat-bypass", line 1, column 42`},
		{map[string]string{"name": "nat-arg", "when": "busy_network(request.ip)", "then": "challenge"}, `rule "nat-arg"`},
		{map[string]string{"name": "nat-var", "when": "request.busy", "then": "challenge"}, `rule "nat-var"`},
	} {
		a := put(busySale(2, 0, nil, c.rule))
		wantCode(t, c.rule["name"], a, http.StatusBadRequest, "invalid_rule")
		if d := nodetest.Str(a.Body, "detail"); !strings.Contains(d, c.detail) {
			t.Errorf("%s: detail %q, want it to name %q", c.rule["name"], d, c.detail)
		}
	}
	a := put(busySale(2, 0, map[string]any{"per_second": -1}, carrierNAT))
	if a.Status != http.StatusBadRequest || !strings.Contains(nodetest.Str(a.Body, "detail"), "busy_network") {
		t.Fatalf("ceiling off: %d %s, want 400 naming limits.busy_network", a.Status, a.Raw)
	}
	if g := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/bad", map[string]string{"Authorization": "Bearer " + n.AdminToken}, nil); g.Status != http.StatusNotFound {
		t.Fatalf("a refused save stored the sale: %d %s", g.Status, g.Raw)
	}
}

// TestBusyNetworkCostsNothingWithinBudget: the rule adds no Redis
// command to a join within its per-IP budget, nor to a join over it
// that brings no solution (asked for one from the node's memory): each
// costs what it costs in a sale without the rule (INFO commandstats, on
// a node whose background loops are off).
func TestBusyNetworkCostsNothingWithinBudget(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Manual: true}))
	nodetest.CreateSale(t, n, "plain", busySale(1, 0, nil))
	nodetest.CreateSale(t, n, "nat", busySale(1, 0, nil, carrierNAT))
	// Warm the connections and the script caches.
	wantJoined(t, "warm plain", join(t, n, "plain", from("w", "198.51.100.9")))
	wantJoined(t, "warm nat", join(t, n, "nat", from("w", "198.51.100.9")))
	// cost is what one join ran in Redis, by command (INFO's own left out).
	cost := func(ev, u string, status int) map[string]int64 {
		t.Helper()
		before := r.CommandStats(t)
		if a := join(t, n, ev, from(u, "100.64.3.3")); a.Status != status {
			t.Fatalf("%s joins %s: %d %s, want %d", u, ev, a.Status, a.Raw, status)
		}
		ran := map[string]int64{}
		for k, v := range r.CommandStats(t) {
			if k != "info" && v != before[k] {
				ran[k] = v - before[k]
			}
		}
		return ran
	}
	plain, nat := cost("plain", "c1", http.StatusOK), cost("nat", "c1", http.StatusOK)
	if len(plain) == 0 || !reflect.DeepEqual(nat, plain) {
		t.Errorf("a join within the budget ran %v in Redis with the rule, %v without", nat, plain)
	}
	plain, nat = cost("plain", "c2", http.StatusTooManyRequests), cost("nat", "c2", http.StatusForbidden)
	if !reflect.DeepEqual(nat, plain) {
		t.Errorf("a join over the budget without a solution ran %v in Redis with the rule, %v without (its 429)", nat, plain)
	}
}

// TestBusyNetworkCaptcha: in a sale with a captcha the busy network's
// challenge is the captcha: a join over its per-IP budget is asked for
// one (403 captcha_required, no call to the provider), a passed token
// joins, and a replayed token (which the provider refuses) does not. The
// ceiling is spent before the provider's call: once it is spent, tokens
// from the address are refused 429 without a call.
func TestBusyNetworkCaptcha(t *testing.T) {
	stub := &siteverifyStub{secret: "0x4AAAAAAAbusy-secret", spent: map[string]bool{}}
	srv := httptest.NewServer(stub)
	t.Cleanup(srv.Close)
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), CaptchaSiteverifyURL: srv.URL, CaptchaTimeout: time.Second}))
	sale := busySale(1, 0, map[string]any{"per_second": 0.001, "burst": 3}, carrierNAT)
	sale["limits"].(map[string]any)["captcha"] = map[string]any{"provider": "turnstile", "site_key": "1x00000000000000000000AA", "secret": stub.secret}
	nodetest.CreateSale(t, n, "cap", sale)
	nat := "100.64.4.4"
	wantJoined(t, "k1", join(t, n, "cap", with(from("k1", nat), "X-Captcha", "pass-1")))
	wantCode(t, "k2 over the budget", join(t, n, "cap", from("k2", nat)), http.StatusForbidden, "captcha_required")
	wantJoined(t, "k2 passed", join(t, n, "cap", with(from("k2", nat), "X-Captcha", "pass-2")))
	wantCode(t, "k3 replays k2's token", join(t, n, "cap", with(from("k3", nat), "X-Captcha", "pass-2")), http.StatusForbidden, "captcha_failed")
	wantCode(t, "k4's garbage token", join(t, n, "cap", with(from("k4", nat), "X-Captcha", "fail")), http.StatusForbidden, "captcha_failed")
	stub.mu.Lock()
	calls := len(stub.calls)
	stub.mu.Unlock()
	for _, u := range []string{"k5", "k6", "k7"} {
		wantRateLimited(t, join(t, n, "cap", with(from(u, nat), "X-Captcha", "pass-"+u)), "challenged join requests per ip")
	}
	stub.mu.Lock()
	defer stub.mu.Unlock()
	if len(stub.calls) != calls || calls != 4 { // k1, k2, k3, k4
		t.Errorf("the provider was called %d times, then %d more past the ceiling; want 4, then none", calls, len(stub.calls)-calls)
	}
}

// TestBusyNetworkRaces: one solution sent by eight joins at once buys one
// join; eight solved joins at once from one address past its budget get
// exactly the ceiling's burst.
func TestBusyNetworkRaces(t *testing.T) {
	n, _ := busyNode(t)
	nodetest.CreateSale(t, n, "race", busySale(1, 0, map[string]any{"per_second": 0.001, "burst": 3}, carrierNAT))
	nat := "100.64.5.5"
	wantJoined(t, "first", join(t, n, "race", from("first", nat)))
	count := func(answers []nodetest.Answer) map[string]int {
		out := map[string]int{}
		for _, a := range answers {
			out[strconv.Itoa(a.Status)+" "+nodetest.Str(a.Body, "code")]++
		}
		return out
	}
	at := func(hdrs []map[string]string) []nodetest.Answer {
		answers := make([]nodetest.Answer, len(hdrs))
		var wg sync.WaitGroup
		for i, h := range hdrs {
			wg.Go(func() { answers[i] = join(t, n, "race", h) })
		}
		wg.Wait()
		return answers
	}
	one := with(from("z", nat), "X-PoW", solve(t, n, "race", "z", nat))
	got := count(at([]map[string]string{one, one, one, one, one, one, one, one}))
	if got["200 "] != 1 || got["403 pow_required"] != 7 {
		t.Fatalf("one solution sent eight times at once: %v, want one join and 7 pow_required", got)
	}
	var many []map[string]string
	for i := range 8 {
		u := fmt.Sprint("m", i)
		many = append(many, with(from(u, nat), "X-PoW", solve(t, n, "race", u, nat)))
	}
	got = count(at(many))
	if got["200 "] != 2 || got["429 rate_limited"] != 6 { // z spent one of the ceiling's 3
		t.Fatalf("eight solved joins at once: %v, want 2 joins and 6 rate_limited", got)
	}
}
