package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/tokens"
)

// TestSafetyNetRoom drives a safety-net room through the API (no
// background ticks: the test refreshes the view): a bad configuration is
// a problem+json 400 that creates nothing; a running room cannot become a
// sale (409 locked); a join under max_active is admitted at once with its
// token, the next ones queue, and their status polls cost Redis nothing;
// claims are refused; the gate admits at once while the rate allows and
// renews an admission past half its life.
func TestSafetyNetRoom(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	keyDir := t.TempDir()
	n := startNode(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Manual: true, SigningKeys: keyDir, Issuer: "anteroom", Audience: "shop"})
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}

	bad := safetyNet(1, 60, 100)
	bad["supply"] = 5
	raw, _ := json.Marshal(bad)
	a := call(t, http.MethodPut, n.URL()+"/admin/events/net", admin, raw)
	if a.status != http.StatusBadRequest || !strings.HasPrefix(a.header.Get("Content-Type"), "application/problem+json") || !strings.Contains(str(a.body, "detail"), "supply") {
		t.Fatalf("safety_net with supply: %d %s %s, want a problem+json 400 naming supply", a.status, a.header.Get("Content-Type"), a.raw)
	}
	if a := call(t, http.MethodGet, n.URL()+"/admin/events/net", admin, nil); a.status != http.StatusNotFound {
		t.Fatalf("the refused room exists: %d %s", a.status, a.raw)
	}
	createSale(t, n, "net", safetyNet(1, 60, 100))
	toSale, _ := json.Marshal(map[string]any{"mode": "fcfs", "supply": 10})
	if a := call(t, http.MethodPut, n.URL()+"/admin/events/net", admin, toSale); a.status != http.StatusConflict || str(a.body, "code") != "locked" {
		t.Fatalf("switching a running room to fcfs: %d %s, want 409 locked", a.status, a.raw)
	}
	if a := call(t, http.MethodGet, n.URL()+"/events/net", nil, nil); str(a.body, "mode") != "safety_net" || str(a.body, "state") != "open" {
		t.Fatalf("public view: %s, want an open safety_net room", a.raw)
	}

	var tickets []string
	for i := range 3 {
		j := call(t, http.MethodPost, n.URL()+"/events/net/join", nil, nil)
		if j.status != http.StatusOK {
			t.Fatalf("join %d: %d %s", i, j.status, j.raw)
		}
		admitted := str(j.body, "state") == "admitted" && str(j.body, "admission_token") != ""
		if admitted != (i == 0) {
			t.Fatalf("join %d: %s, want only the first admitted at once", i, j.raw)
		}
		if i == 0 {
			if c := jarless(j.header, "anteroom_a_net"); c == "" {
				t.Fatalf("the admitted join set no admission cookie: %v", j.header)
			}
			claimed := call(t, http.MethodPost, n.URL()+"/events/net/claim", map[string]string{"Authorization": "Bearer " + str(j.body, "admission_token")}, nil)
			if claimed.status != http.StatusForbidden || !strings.HasPrefix(claimed.header.Get("Content-Type"), "application/problem+json") {
				t.Fatalf("claim in a safety-net room: %d %s, want 403", claimed.status, claimed.raw)
			}
		}
		tickets = append(tickets, str(j.body, "ticket"))
	}
	if err := n.Snapshots.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := r.CommandCount(t)
	for i := range 200 {
		s := call(t, http.MethodGet, n.URL()+"/events/net/status", map[string]string{"Authorization": "Bearer " + tickets[1+i%2]}, nil)
		if s.status != http.StatusOK || str(s.body, "state") != "waiting" {
			t.Fatalf("status of a waiting person: %d %s", s.status, s.raw)
		}
	}
	if after := r.CommandCount(t); after != before {
		t.Fatalf("200 status polls ran %d Redis commands, want 0", after-before)
	}

	// The gate: a room with a credit of one admission admits the first
	// visitor at once and sends the second to the waiting page.
	createSale(t, n, "slow", safetyNet(100, 60, 0.01))
	if err := n.Snapshots.RefreshOne(context.Background(), "slow"); err != nil {
		t.Fatal(err)
	}
	first := call(t, http.MethodGet, n.URL()+"/events/slow/gate", nil, nil)
	if first.status != http.StatusNoContent || first.header.Get("X-Anteroom-User") == "" || jarless(first.header, "anteroom_a_slow") == "" {
		t.Fatalf("gate under the thresholds: %d %v, want 204 with a user and the admission cookie", first.status, first.header)
	}
	second := call(t, http.MethodGet, n.URL()+"/events/slow/gate", map[string]string{"X-Original-URI": "/home"}, nil)
	if second.status != http.StatusUnauthorized || second.header.Get("X-Anteroom-Redirect") != "/e/slow?return=%2Fhome" {
		t.Fatalf("gate past the rate: %d %v, want 401 to the waiting page", second.status, second.header)
	}

	// Renewal: an admission with less than half its life left comes back
	// renewed (a new cookie); a fresh one passes as it is.
	keys, err := tokens.OpenKeyDir(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	iss := tokens.NewIssuer(keys, tokens.IssuerConfig{Issuer: "anteroom", Audience: "shop"})
	old, _, err := iss.Issue("slow", "v-1", 1, 60*time.Second, time.Now().Add(-50*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	renewed := call(t, http.MethodGet, n.URL()+"/events/slow/gate", map[string]string{"Cookie": "anteroom_a_slow=" + old}, nil)
	if c := jarless(renewed.header, "anteroom_a_slow"); renewed.status != http.StatusNoContent || c == "" || c == old || tokenSub(t, c) != "v-1" {
		t.Fatalf("gate with an old admission: %d %v, want 204 with a renewed cookie for v-1", renewed.status, renewed.header)
	}
	fresh := jarless(first.header, "anteroom_a_slow")
	if again := call(t, http.MethodGet, n.URL()+"/events/slow/gate", map[string]string{"Cookie": "anteroom_a_slow=" + fresh}, nil); again.status != http.StatusNoContent || jarless(again.header, "anteroom_a_slow") != "" {
		t.Fatalf("gate with a fresh admission: %d %v, want 204 without a new cookie", again.status, again.header)
	}
}

// jarless returns the value of cookie name among the Set-Cookie headers h.
func jarless(h http.Header, name string) string {
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}
