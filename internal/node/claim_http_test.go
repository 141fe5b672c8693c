package node_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestClaimLifecycleHTTP follows claims through the HTTP API: the user
// lists their claims, releases a pending one (twice: the same answer; an
// admin may too), cannot release another user's, claims again in the freed
// slot; then the order worker starts in the node and confirms the pending
// claims, a confirmed claim cannot be released, and the admin view shows
// the worker's lag.
func TestClaimLifecycleHTTP(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	sale := openSale(10, 2, 0, 0, 1000)
	sale["buckets"] = 2
	nodetest.CreateSale(t, n, "life", sale)
	token := nodetest.AdmitUser(t, n, "life", "alice")
	ev := n.URL() + "/events/life"
	alice := map[string]string{"X-User-ID": "alice"}
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	claimWith := func(key string) string {
		t.Helper()
		a := nodetest.Call(t, http.MethodPost, ev+"/claim", map[string]string{
			"X-User-ID": "alice", "Authorization": "Bearer " + token, "Idempotency-Key": key}, nil)
		if a.Status != http.StatusCreated {
			t.Fatalf("claim %s: %d %s", key, a.Status, a.Raw)
		}
		return nodetest.Str(a.Body, "claim_id")
	}
	release := func(id string, hdr map[string]string) nodetest.Answer {
		return nodetest.Call(t, http.MethodPost, ev+"/claims/"+id+"/release", hdr, nil)
	}
	status := func(id string) string {
		return nodetest.Str(nodetest.Call(t, http.MethodGet, ev+"/claims/"+id, alice, nil).Body, "status")
	}

	id1, id2 := claimWith("one"), claimWith("two")
	a := nodetest.Call(t, http.MethodPost, ev+"/claim", map[string]string{
		"X-User-ID": "alice", "Authorization": "Bearer " + token, "Idempotency-Key": "three"}, nil)
	if a.Status != http.StatusConflict || nodetest.Str(a.Body, "code") != "limit_reached" {
		t.Fatalf("third claim: %d %s, want 409 limit_reached", a.Status, a.Raw)
	}
	list := nodetest.Call(t, http.MethodGet, ev+"/claims", alice, nil)
	if claims, _ := list.Body["claims"].([]any); list.Status != http.StatusOK || len(claims) != 2 {
		t.Fatalf("list: %d %s, want alice's 2 claims", list.Status, list.Raw)
	}
	if a := nodetest.Call(t, http.MethodGet, ev+"/claims", map[string]string{"X-User-ID": "bob"}, nil); len(a.Body["claims"].([]any)) != 0 {
		t.Errorf("bob's list: %s, want empty", a.Raw)
	}
	if a := nodetest.Call(t, http.MethodGet, ev+"/claims", nil, nil); a.Status != http.StatusUnauthorized {
		t.Errorf("list without identity: %d, want 401", a.Status)
	}

	if a := release(id2, map[string]string{"X-User-ID": "bob"}); a.Status != http.StatusNotFound {
		t.Errorf("bob releasing alice's claim: %d %s, want 404", a.Status, a.Raw)
	}
	for _, who := range []map[string]string{alice, alice, admin} {
		if a := release(id2, who); a.Status != http.StatusOK || nodetest.Str(a.Body, "status") != "released" {
			t.Fatalf("releasing %s: %d %s", id2, a.Status, a.Raw)
		}
	}
	id3 := claimWith("three") // the released claim freed a slot

	if err := n.StartWorker(context.Background()); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, "the order worker to confirm", 10*time.Second, func() bool {
		return status(id1) == "confirmed" && status(id3) == "confirmed"
	})
	if got := status(id2); got != "released" {
		t.Errorf("released claim %s is %s after the worker ran", id2, got)
	}
	if a := release(id1, alice); a.Status != http.StatusConflict {
		t.Errorf("releasing a confirmed claim: %d %s, want 409", a.Status, a.Raw)
	}
	view := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/life", admin, nil)
	live, _ := view.Body["live"].(map[string]any)
	lag, ok := live["order_lag"].(map[string]any)
	if !ok {
		t.Fatalf("admin view without order_lag: %s", view.Raw)
	}
	if _, ok := lag["pending"]; !ok {
		t.Errorf("order_lag %v lacks pending", lag)
	}
	stock, _ := live["stock"].(map[string]any)
	if stock["released"] != float64(1) || stock["granted"] != float64(3) {
		t.Errorf("stock %v, want 3 granted and 1 released", stock)
	}
}

// TestPauseAndRebuildHTTP pauses a sale, sees claims refused with 503
// paused and Retry-After, rebuilds it through the admin API (it stays
// paused, as it was), resumes it, and claims again.
func TestPauseAndRebuildHTTP(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	sale := openSale(20, 1, 0, 0, 1000)
	sale["buckets"] = 2
	sale["reserve_units"] = 2
	nodetest.CreateSale(t, n, "rb", sale)
	ev := n.URL() + "/events/rb"
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	claimAs := func(user, token string) nodetest.Answer {
		return nodetest.Call(t, http.MethodPost, ev+"/claim", map[string]string{"X-User-ID": user, "Authorization": "Bearer " + token}, nil)
	}
	for _, u := range []string{"a", "b", "c"} {
		if a := claimAs(u, nodetest.AdmitUser(t, n, "rb", u)); a.Status != http.StatusCreated {
			t.Fatalf("claim %s: %d %s", u, a.Status, a.Raw)
		}
	}
	late := nodetest.AdmitUser(t, n, "rb", "d")
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/rb/pause", admin, nil); a.Status != http.StatusOK {
		t.Fatalf("pause: %d %s", a.Status, a.Raw)
	}
	paused := claimAs("d", late)
	if paused.Status != http.StatusServiceUnavailable || nodetest.Str(paused.Body, "code") != "paused" || paused.Header.Get("Retry-After") == "" {
		t.Fatalf("claim while paused: %d %s, want 503 paused with Retry-After", paused.Status, paused.Raw)
	}
	rep := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/rb/rebuild", admin, nil)
	if rep.Status != http.StatusOK || rep.Body["granted"] != float64(3) || rep.Body["available"] != float64(15) {
		t.Fatalf("rebuild: %d %s, want 3 granted and 15 available", rep.Status, rep.Raw)
	}
	if a := claimAs("d", late); a.Status != http.StatusServiceUnavailable {
		t.Fatalf("claim after a rebuild of a paused sale: %d, want still paused", a.Status)
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/rb/resume", admin, nil); a.Status != http.StatusOK {
		t.Fatalf("resume: %d %s", a.Status, a.Raw)
	}
	if a := claimAs("d", late); a.Status != http.StatusCreated {
		t.Fatalf("claim after resume: %d %s", a.Status, a.Raw)
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/rb/rebuild", nil, nil); a.Status != http.StatusUnauthorized {
		t.Errorf("rebuild without the admin token: %d, want 401", a.Status)
	}
}
