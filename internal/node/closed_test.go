package node_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestClosedRoomHTTP closes a running sale through the admin API and
// tries everything a shopper could: a join (new, repeated, with a
// message's Retry-After) is refused 503 closed, a queued shopper's status
// answers closed with their place kept, a claim with a valid admission
// token is refused, the gate sends the admitted to the waiting page, and
// the frontier stands still through several ticks. A bad closure body is
// a 400 that changes nothing. Reopening lets the same token claim, moves
// the frontier and takes joins again.
func TestClosedRoomHTTP(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "shut", openSale(1000, 1, 0, 0, 2)) // two a second: people stay waiting
	ev := n.URL() + "/events/shut"
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	token := nodetest.AdmitUser(t, n, "shut", "first")
	var last string
	for i := range 30 {
		j := nodetest.Call(t, http.MethodPost, ev+"/join", map[string]string{"X-User-ID": fmt.Sprint("q", i)}, nil)
		if j.Status != http.StatusOK {
			t.Fatalf("join q%d: %d %s", i, j.Status, j.Raw)
		}
		last = nodetest.Str(j.Body, "ticket")
	}
	statusOfLast := func() nodetest.Answer {
		return nodetest.Call(t, http.MethodGet, ev+"/status", map[string]string{"Authorization": "Bearer " + last}, nil)
	}
	before := statusOfLast()
	if st := nodetest.Str(before.Body, "state"); st != "waiting" {
		t.Fatalf("the last joiner before closing: %s, want waiting", before.Raw)
	}
	frontier := func() float64 { s, _ := n.Snapshots.Get("shut"); return s.Frontier }

	until := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	closeBody := fmt.Sprintf(`{"message":"Stock count: back at two.","until":%q}`, until.Format(time.RFC3339))
	c := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/shut/close", admin, []byte(closeBody))
	if c.Status != http.StatusOK || !strings.Contains(string(c.Raw), `"closed":{"message":"Stock count: back at two."`) {
		t.Fatalf("close: %d %s", c.Status, c.Raw)
	}
	version := c.Body["config"].(map[string]any)["version"]
	for _, bad := range []string{
		`{"message":"` + strings.Repeat("x", 501) + `"}`,
		`{"message":"ok","reason":"unknown field"}`,
		`{"message":"ok"} trailing`,
		`{"until":"tomorrow"}`,
	} {
		a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/shut/close", admin, []byte(bad))
		if a.Status != http.StatusBadRequest || a.Header.Get("Content-Type") != "application/problem+json" || nodetest.Str(a.Body, "code") != "bad_request" {
			t.Errorf("close with %.40s: %d %s %s, want a 400 problem", bad, a.Status, a.Header.Get("Content-Type"), a.Raw)
		}
	}
	if g := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/shut", admin, nil); g.Body["config"].(map[string]any)["version"] != version ||
		!strings.Contains(string(g.Raw), "Stock count: back at two.") {
		t.Fatalf("after the refused closures: %s, want version %v and the first message", g.Raw, version)
	}

	for _, who := range []string{"newcomer", "q3"} { // a new joiner, and one already queued
		j := nodetest.Call(t, http.MethodPost, ev+"/join", map[string]string{"X-User-ID": who}, nil)
		retry, _ := strconv.Atoi(j.Header.Get("Retry-After"))
		if j.Status != http.StatusServiceUnavailable || nodetest.Str(j.Body, "code") != "closed" ||
			j.Header.Get("Content-Type") != "application/problem+json" || retry < 7000 || retry > 7200 {
			t.Errorf("join %s while closed: %d Retry-After %q %s, want 503 closed with Retry-After up to the announced end (7200 s)", who, j.Status, j.Header.Get("Retry-After"), j.Raw)
		}
	}
	s := statusOfLast()
	if nodetest.Str(s.Body, "state") != "closed" || nodetest.Str(s.Body, "closed_by") != "staff" || s.Body["position"] != before.Body["position"] || s.Body["admission_token"] != nil {
		t.Errorf("queued status while closed: %s, want closed by staff at position %v, no token", s.Raw, before.Body["position"])
	}
	claim := func() nodetest.Answer {
		return nodetest.Call(t, http.MethodPost, ev+"/claim", map[string]string{"X-User-ID": "first", "Authorization": "Bearer " + token, "Idempotency-Key": "k1"}, nil)
	}
	if a := claim(); a.Status != http.StatusServiceUnavailable || nodetest.Str(a.Body, "code") != "closed" || a.Header.Get("Retry-After") == "" {
		t.Errorf("claim while closed: %d %s, want 503 closed with Retry-After", a.Status, a.Raw)
	}
	g := nodetest.Call(t, http.MethodGet, ev+"/gate", map[string]string{"Authorization": "Bearer " + token, "X-Original-URI": "/checkout"}, nil)
	if g.Status != http.StatusUnauthorized || g.Header.Get("X-Anteroom-Redirect") != "/e/shut?return=%2Fcheckout" {
		t.Errorf("gate while closed, with a valid admission: %d redirect %q, want 401 to the waiting page", g.Status, g.Header.Get("X-Anteroom-Redirect"))
	}
	var pub struct {
		Closed *struct {
			Message string    `json:"message"`
			Until   time.Time `json:"until"`
		} `json:"closed"`
	}
	if p := nodetest.Call(t, http.MethodGet, ev, nil, nil); json.Unmarshal(p.Raw, &pub) != nil || pub.Closed == nil || pub.Closed.Message != "Stock count: back at two." || !pub.Closed.Until.Equal(until) {
		t.Errorf("public event while closed: %s, want the closure", p.Raw)
	}
	afterTick(t, n, "shut")
	f0 := frontier()
	throughTicks(t, n, "shut", 1500*time.Millisecond, func() {
		if f := frontier(); f != f0 {
			t.Fatalf("frontier moved %.3f -> %.3f while the room was closed", f0, f)
		}
	})

	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/shut/reopen", admin, nil); a.Status != http.StatusOK || strings.Contains(string(a.Raw), `"closed"`) {
		t.Fatalf("reopen: %d %s", a.Status, a.Raw)
	}
	if a := claim(); a.Status != http.StatusCreated {
		t.Errorf("claim after reopening with the same admission: %d %s, want 201", a.Status, a.Raw)
	}
	nodetest.WaitFor(t, "the frontier to move after reopening", 10*time.Second, func() bool { return frontier() > f0 })
	if st := nodetest.Str(statusOfLast().Body, "state"); st != "waiting" && st != "admitted" {
		t.Errorf("queued status after reopening: %s, want waiting or admitted", st)
	}
	if j := nodetest.Call(t, http.MethodPost, ev+"/join", map[string]string{"X-User-ID": "newcomer"}, nil); j.Status != http.StatusOK {
		t.Errorf("join after reopening: %d %s", j.Status, j.Raw)
	}
	nodetest.WaitFor(t, "closed and reopened in the lifecycle", 10*time.Second, func() bool {
		l := string(nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/shut/lifecycle", admin, nil).Raw)
		return strings.Count(l, `"type":"closed"`) == 1 && strings.Count(l, `"type":"reopened"`) == 1
	})
}

// TestEmbeddingBadInputHTTP: a frame_ancestors entry that is not an origin
// is a 400 problem+json naming it, and nothing is saved; a good list is
// saved and sent as the room's frame-ancestors. Page copy in an unknown
// language and a preview in one are 400s too.
func TestEmbeddingBadInputHTTP(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "framed", openSale(10, 1, 10*time.Minute, 0, 10))
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	base := n.URL() + "/admin/events/framed"
	version := func() any {
		return nodetest.Call(t, http.MethodGet, base, admin, nil).Body["config"].(map[string]any)["version"]
	}
	v0 := version()
	for _, o := range []string{"shop.example", "https://shop.example/", "https://shop.example; script-src *", "*", "'self'", "http://shop.example", "https://*.com"} {
		body, _ := json.Marshal(map[string]any{"frame_ancestors": []string{"https://ok.example", o}})
		a := nodetest.Call(t, http.MethodPut, base, admin, body)
		if a.Status != http.StatusBadRequest || a.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(nodetest.Str(a.Body, "detail"), "frame_ancestors[1]") {
			t.Errorf("frame_ancestors %q: %d %s, want a 400 problem naming frame_ancestors[1]", o, a.Status, a.Raw)
		}
	}
	if v := version(); v != v0 {
		t.Fatalf("version %v after refused saves, want %v: something was saved", v, v0)
	}
	if a := nodetest.Call(t, http.MethodPut, base, admin, []byte(`{"frame_ancestors":["https://shop.example","http://localhost:3000"]}`)); a.Status != http.StatusOK {
		t.Fatalf("save a good list: %d %s", a.Status, a.Raw)
	}
	nodetest.WaitFor(t, "the room to allow the shop", 5*time.Second, func() bool {
		p := nodetest.Call(t, http.MethodGet, n.URL()+"/e/framed", nil, nil)
		return strings.Contains(p.Header.Get("Content-Security-Policy"), "frame-ancestors https://shop.example http://localhost:3000") && p.Header.Get("X-Frame-Options") == ""
	})

	// Framed by another site, the room's cookies must be SameSite=None;
	// Secure to reach it (over TLS, here as a trusted proxy says).
	j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/framed/join", map[string]string{"X-User-ID": "ann", "X-Forwarded-Proto": "https"}, nil)
	if ck := strings.ToLower(strings.Join(j.Header.Values("Set-Cookie"), "; ")); j.Status != http.StatusOK || !strings.Contains(ck, "samesite=none") || !strings.Contains(ck, "secure") {
		t.Errorf("join of an embeddable sale over TLS: %d Set-Cookie %q, want SameSite=None; Secure", j.Status, ck)
	}

	a := nodetest.Call(t, http.MethodPut, base+"/page", admin, []byte(`{"copy":{"xx":{"join":"Join"}}}`))
	if a.Status != http.StatusBadRequest || a.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(nodetest.Str(a.Body, "detail"), "copy.xx") {
		t.Errorf("copy in an unknown language: %d %s, want a 400 problem naming copy.xx", a.Status, a.Raw)
	}
	if p := nodetest.Call(t, http.MethodGet, base+"/page", admin, nil); p.Body["draft"] != nil {
		t.Errorf("after the refused copy: %s, want no draft", p.Raw)
	}
	for _, path := range []string{base + "/preview?state=waiting&lang=xx", n.URL() + "/e/framed/messages?lang=xx"} {
		if a := nodetest.Call(t, http.MethodGet, path, admin, nil); a.Status != http.StatusBadRequest || nodetest.Str(a.Body, "code") != "bad_request" {
			t.Errorf("GET %s: %d %s, want 400 bad_request", path, a.Status, a.Raw)
		}
	}
}

// TestClosedSafetyNetRoom: a safety-net room staff closed lets nobody in,
// not even at once under its thresholds: join is 503 closed, and the gate
// sends a visitor with a valid admission, or none, to the waiting page.
func TestClosedSafetyNetRoom(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL()})
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	nodetest.CreateSale(t, n, "site", safetyNet(100, 60, 100))
	j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/site/join", nil, nil)
	token := nodetest.Str(j.Body, "admission_token")
	if j.Status != http.StatusOK || token == "" {
		t.Fatalf("join under the thresholds: %d %s, want admitted at once", j.Status, j.Raw)
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/site/close", admin, nil); a.Status != http.StatusOK {
		t.Fatalf("close: %d %s", a.Status, a.Raw)
	}
	if j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/site/join", nil, nil); j.Status != http.StatusServiceUnavailable || nodetest.Str(j.Body, "code") != "closed" || j.Header.Get("Retry-After") != "60" {
		t.Errorf("join a closed room: %d Retry-After %q %s, want 503 closed, Retry-After 60", j.Status, j.Header.Get("Retry-After"), j.Raw)
	}
	for name, hdr := range map[string]map[string]string{"admitted": {"Authorization": "Bearer " + token}, "nobody": nil} {
		g := nodetest.Call(t, http.MethodGet, n.URL()+"/events/site/gate", hdr, nil)
		if g.Status != http.StatusUnauthorized || g.Header.Get("X-Anteroom-Redirect") != "/e/site" || g.Header.Get("Set-Cookie") != "" {
			t.Errorf("gate of a closed room (%s): %d redirect %q cookie %q, want 401 to the waiting page, no admission", name, g.Status, g.Header.Get("X-Anteroom-Redirect"), g.Header.Get("Set-Cookie"))
		}
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/site/reopen", admin, nil); a.Status != http.StatusOK {
		t.Fatalf("reopen: %d %s", a.Status, a.Raw)
	}
	if g := nodetest.Call(t, http.MethodGet, n.URL()+"/events/site/gate", map[string]string{"Authorization": "Bearer " + token}, nil); g.Status != http.StatusNoContent {
		t.Errorf("gate after reopening, with the admission: %d, want 204", g.Status)
	}
}
