package node_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/tokens"
	"github.com/redis/go-redis/v9"
)

// basicForm is the form token of the basic page's join form.
var basicForm = regexp.MustCompile(`name="form" value="([^"]+)"`)

// basicKind is the outcome the basic page shows (its result box).
var basicKind = regexp.MustCompile(`id="result" class="msg [a-z]+" data-kind="([a-z_]+)"`)

// TestClosedRoomEveryWayIn closes a sale while its shuffle window is open,
// and a safety-net room, and tries every way in: a JSON join, the basic
// page's join form (with a form token the page gave while open), a pass
// redemption, a lane invite, a room's join and its gate. Each is refused
// — 503 closed (the form with the basic page's closed page: HTML,
// Retry-After) or the gate's 401 to the waiting page — and changes
// nothing: no queue sequence, lane sequence or pass use moves, no ticket
// or admission cookie is set. The basic lobby shows the closure instead
// of the join form. Reopened, the same ways in work again and the next
// place is the one after those taken before the closure.
func TestClosedRoomEveryWayIn(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TicketSecret: secret}))
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	sale := openSale(1000, 1, 0, 600, 2) // the shuffle window is open for ten minutes
	sale["lanes"] = []any{map[string]any{"name": "members", "share": 0.5}}
	nodetest.CreateSale(t, n, "shut", sale)
	nodetest.CreateSale(t, n, "site", safetyNet(100, 60, 100))
	inv, _ := tokens.NewInvites(secret)
	invite := inv.SignLane("shut", "ivy", "members", time.Now().Add(time.Hour))
	m := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/shut/passes", admin, []byte(`{"uses":1}`))
	pass := nodetest.Str(m.Body, "pass")
	if m.Status != http.StatusCreated || pass == "" {
		t.Fatalf("mint a pass: %d %s", m.Status, m.Raw)
	}

	rdb := r.Client(t)
	seq := func(key string) int64 {
		t.Helper()
		v, err := rdb.Get(ctx, key).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		return v
	}
	uses := func() int64 {
		t.Helper()
		c, err := admission.NewPasses(rdb).Counts(ctx, "shut")
		if err != nil {
			t.Fatal(err)
		}
		return c.Redeemed
	}
	type counts struct{ sale, lane, room, passes int64 }
	now := func() counts {
		return counts{seq(queue.KeysFor("shut").Seq), seq(queue.KeysForLane("shut", 1).Seq), seq(queue.KeysFor("site").Seq), uses()}
	}
	for i, u := range []string{"a", "b", "c"} {
		if j := join(t, n, "shut", map[string]string{"X-User-ID": u}); j.Status != http.StatusOK || j.Body["seq"] != float64(i+1) {
			t.Fatalf("join %s before closing: %d %s", u, j.Status, j.Raw)
		}
	}
	if j := join(t, n, "site", map[string]string{"X-User-ID": "r0"}); j.Status != http.StatusOK {
		t.Fatalf("room join before closing: %d %s", j.Status, j.Raw)
	}
	lobby := nodetest.Call(t, http.MethodGet, n.URL()+"/e/shut/basic", map[string]string{"X-User-ID": "formy"}, nil)
	form := match1(basicForm, string(lobby.Raw))
	if lobby.Status != http.StatusOK || form == "" {
		t.Fatalf("the basic lobby while open: %d %.300s, want the join form", lobby.Status, lobby.Raw)
	}

	const message = "Stock count; back soon."
	for _, ev := range []string{"shut", "site"} {
		if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/"+ev+"/close", admin, []byte(`{"message":"`+message+`"}`)); a.Status != http.StatusOK {
			t.Fatalf("close %s: %d %s", ev, a.Status, a.Raw)
		}
	}
	before := now()
	if before != (counts{sale: 3, room: 1}) {
		t.Fatalf("before the ways in: %+v, want 3 joined, 1 in the room, nothing else", before)
	}
	formPost := func(user string) nodetest.Answer {
		return nodetest.Call(t, http.MethodPost, n.URL()+"/e/shut/basic/join", map[string]string{
			"X-User-ID": user, "Content-Type": "application/x-www-form-urlencoded", "Origin": n.URL(), "Sec-Fetch-Site": "same-origin",
		}, []byte(url.Values{"form": {form}}.Encode()))
	}
	jsonClosed := func(t *testing.T, a nodetest.Answer) {
		t.Helper()
		problemOK(t, a, http.StatusServiceUnavailable, "closed")
		if a.Header.Get("Retry-After") != "60" {
			t.Errorf("Retry-After %q, want 60", a.Header.Get("Retry-After"))
		}
	}
	for _, way := range []struct {
		name  string
		try   func() nodetest.Answer
		check func(*testing.T, nodetest.Answer)
	}{
		{"JSON join", func() nodetest.Answer { return join(t, n, "shut", map[string]string{"X-User-ID": "newcomer"}) }, jsonClosed},
		{"JSON join of one already queued", func() nodetest.Answer { return join(t, n, "shut", map[string]string{"X-User-ID": "b"}) }, jsonClosed},
		{"pass", func() nodetest.Answer {
			return join(t, n, "shut", map[string]string{"X-User-ID": "vip", tokens.PassHeader: pass})
		}, jsonClosed},
		{"lane invite", func() nodetest.Answer {
			return join(t, n, "shut", map[string]string{"X-User-ID": "ivy", "X-Invite-Token": invite})
		}, jsonClosed},
		{"room join", func() nodetest.Answer { return join(t, n, "site", map[string]string{"X-User-ID": "r1"}) }, jsonClosed},
		{"room gate", func() nodetest.Answer {
			return nodetest.Call(t, http.MethodGet, n.URL()+"/events/site/gate", map[string]string{"X-User-ID": "r2"}, nil)
		}, func(t *testing.T, a nodetest.Answer) {
			if a.Status != http.StatusUnauthorized || a.Header.Get("X-Anteroom-Redirect") != "/e/site" {
				t.Errorf("%d redirect %q, want 401 to the waiting page", a.Status, a.Header.Get("X-Anteroom-Redirect"))
			}
		}},
		{"basic form join", func() nodetest.Answer { return formPost("formy") }, func(t *testing.T, a nodetest.Answer) {
			retry, _ := strconv.Atoi(a.Header.Get("Retry-After"))
			if a.Status != http.StatusServiceUnavailable || !strings.HasPrefix(a.Header.Get("Content-Type"), "text/html") || retry != 60 ||
				match1(basicKind, string(a.Raw)) != "closed" || !strings.Contains(string(a.Raw), "Stock count; back soon.") {
				t.Errorf("%d %s Retry-After %q kind %q, want the basic page's closed page (503 HTML, Retry-After 60, the message); %.400s",
					a.Status, a.Header.Get("Content-Type"), a.Header.Get("Retry-After"), match1(basicKind, string(a.Raw)), a.Raw)
			}
		}},
	} {
		t.Run(way.name, func(t *testing.T) {
			a := way.try()
			way.check(t, a)
			for _, c := range (&http.Response{Header: a.Header}).Cookies() {
				if strings.HasPrefix(c.Name, "anteroom_t_") || strings.HasPrefix(c.Name, "anteroom_a_") {
					t.Errorf("cookie %s set by a refused way in", c.Name)
				}
			}
			if after := now(); after != before {
				t.Errorf("%s into a closed room changed %+v to %+v", way.name, before, after)
			}
		})
	}
	closedLobby := nodetest.Call(t, http.MethodGet, n.URL()+"/e/shut/basic", map[string]string{"X-User-ID": "late"}, nil)
	if body := string(closedLobby.Raw); closedLobby.Status != http.StatusOK || match1(basicForm, body) != "" || strings.Contains(body, `id="join"`) ||
		match1(basicKind, body) != "closed" || !strings.Contains(body, "Stock count; back soon.") {
		t.Errorf("the basic lobby while closed: %d kind %q %.500s, want 200, the closure's message and no join form", closedLobby.Status, match1(basicKind, body), body)
	}

	for _, ev := range []string{"shut", "site"} {
		if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/"+ev+"/reopen", admin, nil); a.Status != http.StatusOK {
			t.Fatalf("reopen %s: %d %s", ev, a.Status, a.Raw)
		}
	}
	if j := join(t, n, "shut", map[string]string{"X-User-ID": "newcomer"}); j.Status != http.StatusOK || j.Body["seq"] != 4.0 {
		t.Errorf("join after reopening: %d %s, want seq 4", j.Status, j.Raw)
	}
	if a := formPost("formy"); a.Status != http.StatusOK || seq(queue.KeysFor("shut").Seq) != 5 { // 303 to the page, followed
		t.Errorf("form join after reopening: %d, queue sequence %d; want the page and seq 5", a.Status, seq(queue.KeysFor("shut").Seq))
	}
	if j := join(t, n, "shut", map[string]string{"X-User-ID": "vip", tokens.PassHeader: pass}); j.Status != http.StatusOK || nodetest.Str(j.Body, "admission_token") == "" {
		t.Errorf("pass after reopening: %d %s, want admitted", j.Status, j.Raw)
	}
	if j := join(t, n, "site", map[string]string{"X-User-ID": "r1"}); j.Status != http.StatusOK || j.Body["seq"] != 2.0 {
		t.Errorf("room join after reopening: %d %s, want seq 2", j.Status, j.Raw)
	}
}

// match1 is re's first group in s, "" for none.
func match1(re *regexp.Regexp, s string) string {
	if m := re.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}
