package node_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/report"
	"github.com/anteroom/anteroom/tokens"
)

// TestReportOfLanesAndPasses runs a sale whose truth is known — four
// joined the default lane and three the "members" lane by invite, all
// seven came for their admission; two of the default lane and one member
// claimed; one person came with a bypass pass and claimed; a second use of
// that pass was refused; a second pass was minted and revoked — against a
// real redis-server and JetStream, and checks the report's conversion per
// lane and pass counters, as JSON and as CSV, and again from a new node.
func TestReportOfLanesAndPasses(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	cfg := nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TicketSecret: secret})
	n, stop := startStoppable(t, cfg)
	const ev = "replanes"
	sale := openSale(10, 1, time.Second, 0, 1000)
	sale["lanes"] = []any{map[string]any{"name": "members", "share": 0.5, "starts_at": time.Now().UTC().Truncate(time.Second).Add(-time.Second)}}
	nodetest.CreateSale(t, n, ev, sale)
	base := n.URL() + "/events/" + ev
	inv, _ := tokens.NewInvites(secret)

	claimAs := func(user, tok string) {
		t.Helper()
		a := nodetest.Call(t, http.MethodPost, base+"/claim", map[string]string{"X-User-ID": user, "Authorization": "Bearer " + tok}, nil)
		if a.Status != http.StatusCreated {
			t.Fatalf("claim %s: %d %s", user, a.Status, a.Raw)
		}
	}
	for i := range 4 {
		u := fmt.Sprint("u", i)
		j := join(t, n, ev, map[string]string{"X-User-ID": u})
		if j.Status != http.StatusOK || j.Body["lane"] != nil {
			t.Fatalf("join %s: %d %s", u, j.Status, j.Raw)
		}
		if tok := pollAdmission(t, n, ev, nodetest.Str(j.Body, "ticket")); i < 2 {
			claimAs(u, tok)
		}
	}
	for i := range 3 {
		u := fmt.Sprint("m", i)
		j := join(t, n, ev, map[string]string{"X-User-ID": u, tokens.InviteHeader: inv.SignLane(ev, u, "members", time.Now().Add(time.Hour))})
		if j.Status != http.StatusOK || nodetest.Str(j.Body, "lane") != "members" {
			t.Fatalf("lane join %s: %d %s", u, j.Status, j.Raw)
		}
		if tok := pollAdmission(t, n, ev, nodetest.Str(j.Body, "ticket")); i == 0 {
			claimAs(u, tok)
		}
	}
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	mint := func() nodetest.Answer {
		t.Helper()
		a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/"+ev+"/passes", admin, []byte(`{"uses":1,"ttl_seconds":600}`))
		if a.Status != http.StatusCreated {
			t.Fatalf("mint: %d %s", a.Status, a.Raw)
		}
		return a
	}
	pass := nodetest.Str(mint().Body, "pass")
	p := join(t, n, ev, map[string]string{"X-User-ID": "p0", tokens.PassHeader: pass})
	if p.Status != http.StatusOK || nodetest.Str(p.Body, "admission_token") == "" {
		t.Fatalf("pass redeem: %d %s", p.Status, p.Raw)
	}
	claimAs("p0", nodetest.Str(p.Body, "admission_token"))
	problemOK(t, join(t, n, ev, map[string]string{"X-User-ID": "p1", tokens.PassHeader: pass}), http.StatusForbidden, "pass_used_up")
	rec, _ := mint().Body["record"].(map[string]any)
	if d := nodetest.Call(t, http.MethodDelete, n.URL()+"/admin/events/"+ev+"/passes/"+nodetest.Str(rec, "id"), admin, nil); d.Status != http.StatusOK {
		t.Fatalf("revoke: %d %s", d.Status, d.Raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.StartWorker(ctx); err != nil {
		t.Fatal(err)
	}

	wantFunnel := report.Funnel{Joined: 7, Admitted: 7, Present: 7, Granted: 4, Confirmed: 4, Buyers: 4, UnitsGranted: 4}
	wantLanes := []report.Lane{
		{Lane: report.DefaultLane, Joined: 4, Admitted: 4, Buyers: 2, UnitsGranted: 2, Confirmed: 2, Conversion: 0.5},
		{Lane: "members", Joined: 3, Admitted: 3, Buyers: 1, UnitsGranted: 1, Confirmed: 1, Conversion: 1.0 / 3},
		{Lane: report.PassLane, Admitted: 1, Buyers: 1, UnitsGranted: 1, Confirmed: 1, Conversion: 1},
	}
	wantPasses := admission.PassCounts{Minted: 2, Redeemed: 1, Revoked: 1, Refused: 1}
	var got report.Report
	nodetest.WaitFor(t, "the report to show the whole sale", 20*time.Second, func() bool {
		got = getReport(t, n, ev)
		return got.Funnel == wantFunnel && reflect.DeepEqual(got.Lanes, wantLanes)
	})
	if got.Passes != wantPasses {
		t.Errorf("passes %+v, want %+v", got.Passes, wantPasses)
	}
	checkReportCSV(t, n, ev, map[string]string{
		"lane:default/buyers": "2", "lane:members/joined": "3", "lane:members/admitted": "3", "lane:members/confirmed": "1",
		"lane:members/conversion": "0.3333", "lane:pass/admitted": "1", "lane:pass/units_granted": "1",
		"passes/minted": "2", "passes/redeemed": "1", "passes/revoked": "1", "passes/refused": "1",
	})

	// Every figure is durable: a new node gives the same report.
	stop()
	sameReportOnNewNode(t, cfg, ev, got)
}
