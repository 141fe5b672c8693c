package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/tokens"
)

// staffKey creates an account of role and returns an API key of it.
func staffKey(t *testing.T, n *node.Node, name, role string) string {
	t.Helper()
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	body, _ := json.Marshal(map[string]string{"name": name, "role": role, "password": "a long enough password " + name})
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts", admin, body); a.Status != http.StatusCreated {
		t.Fatalf("create %s: %d %s", name, a.Status, a.Raw)
	}
	a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts/"+name+"/keys", admin, nil)
	if a.Status != http.StatusCreated {
		t.Fatalf("key of %s: %d %s", name, a.Status, a.Raw)
	}
	return nodetest.Str(a.Body, "key")
}

// TestBypassPasses: an operator mints passes for one event; a pass admits
// at once (the sale has not started, the queue admits nobody) as many
// times as it allows, never for another event, never once expired or
// revoked, never forged; the claim still holds the per-user limit; mint
// and revoke are audited without the pass; the counters count it all.
func TestBypassPasses(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	later := openSale(5, 1, 30*time.Minute, 0, 1) // the queue admits nobody during the test
	nodetest.CreateSale(t, n, "drop", later)
	nodetest.CreateSale(t, n, "other", later)
	op := map[string]string{"Authorization": "Bearer " + staffKey(t, n, "olga", "operator")}
	viewer := map[string]string{"Authorization": "Bearer " + staffKey(t, n, "vic", "viewer")}
	passes := n.URL() + "/admin/events/drop/passes"
	mint := func(hdr map[string]string, body string) nodetest.Answer {
		t.Helper()
		return nodetest.Call(t, http.MethodPost, passes, hdr, []byte(body))
	}
	redeem := func(ev, user, pass string) nodetest.Answer {
		t.Helper()
		return join(t, n, ev, map[string]string{"X-User-ID": user, tokens.PassHeader: pass})
	}
	counts := func() admission.PassCounts {
		t.Helper()
		c, err := admission.NewPasses(r.Client(t)).Counts(context.Background(), "drop")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	// Bad requests change nothing.
	for _, bad := range []struct {
		hdr    map[string]string
		body   string
		status int
	}{
		{op, `{"uses":-1}`, 400},
		{op, `{"ttl_seconds":99999999}`, 400},
		{op, `{"uses":1,"who":"x"}`, 400},
		{op, `{"note":"a\nb"}`, 400},
		{viewer, `{}`, 403},
	} {
		if a := mint(bad.hdr, bad.body); a.Status != bad.status || a.Header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("mint %s: %d %s, want %d problem+json", bad.body, a.Status, a.Raw, bad.status)
		}
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/nope/passes", op, nil); a.Status != 404 {
		t.Fatalf("mint for no event: %d %s", a.Status, a.Raw)
	}
	if c := counts(); c != (admission.PassCounts{}) {
		t.Fatalf("refused mints counted: %+v", c)
	}

	// A pass of two uses admits two people at once, and no third.
	a := mint(op, `{"uses":2,"ttl_seconds":600,"note":"qa run"}`)
	if a.Status != http.StatusCreated {
		t.Fatalf("mint: %d %s", a.Status, a.Raw)
	}
	two := nodetest.Str(a.Body, "pass")
	if st := redeem("drop", "nobody", ""); st.Status != 200 || nodetest.Str(st.Body, "state") == "admitted" {
		t.Fatalf("plain join: %d %s, want a queue ticket", st.Status, st.Raw)
	}
	var tok string
	for _, user := range []string{"alice", "bob"} {
		got := redeem("drop", user, two)
		if got.Status != 200 || nodetest.Str(got.Body, "state") != "admitted" || nodetest.Str(got.Body, "admission_token") == "" || got.Body["ticket"] != nil {
			t.Fatalf("%s redeems: %d %s", user, got.Status, got.Raw)
		}
		if user == "alice" {
			tok = nodetest.Str(got.Body, "admission_token")
		}
	}
	problemOK(t, redeem("drop", "carol", two), 403, "pass_used_up")
	problemOK(t, redeem("other", "carol", two), 403, "pass_invalid")
	problemOK(t, redeem("drop", "carol", two[:len(two)-2]+"AA"), 403, "pass_invalid")

	// The admission is an admission like any other: one claim per user.
	for i, want := range []int{201, 409} {
		c := nodetest.Call(t, http.MethodPost, n.URL()+"/events/drop/claim", map[string]string{"X-User-ID": "alice",
			"Authorization": "Bearer " + tok, "Idempotency-Key": "k" + string(rune('0'+i))}, nil)
		if c.Status != want {
			t.Fatalf("claim %d with a pass admission: %d %s, want %d", i, c.Status, c.Raw, want)
		}
	}

	// Expired: refused, and counted.
	a = mint(op, `{"ttl_seconds":1}`)
	short, exp := nodetest.Str(a.Body, "pass"), time.Now().Add(2*time.Second)
	nodetest.WaitFor(t, "the short pass to expire", 5*time.Second, func() bool { return time.Now().After(exp) })
	problemOK(t, redeem("drop", "dave", short), 403, "pass_invalid")

	// Revoked: refused on redeem; revoking twice is one audited change.
	a = mint(op, `{"uses":0}`)
	unlimited := nodetest.Str(a.Body, "pass")
	rec, _ := a.Body["record"].(map[string]any)
	id := nodetest.Str(rec, "id")
	if got := redeem("drop", "erin", unlimited); got.Status != 200 {
		t.Fatalf("unlimited pass: %d %s", got.Status, got.Raw)
	}
	problemOK(t, nodetest.Call(t, http.MethodDelete, passes+"/"+id, viewer, nil), 403, "forbidden")
	for range 2 {
		if d := nodetest.Call(t, http.MethodDelete, passes+"/"+id, op, nil); d.Status != 200 || d.Body["revoked_at"] == nil || nodetest.Str(d.Body, "revoked_by") != "olga" {
			t.Fatalf("revoke: %d %s", d.Status, d.Raw)
		}
	}
	problemOK(t, nodetest.Call(t, http.MethodDelete, passes+"/0000000000000000", op, nil), 404, "not_found")
	problemOK(t, redeem("drop", "erin", unlimited), 403, "pass_revoked")

	want := admission.PassCounts{Minted: 3, Redeemed: 3, Revoked: 1, Refused: 3}
	if c := counts(); c != want {
		t.Errorf("counts: got %+v, want %+v", c, want)
	}
	l := nodetest.Call(t, http.MethodGet, passes, viewer, nil)
	if list, _ := l.Body["passes"].([]any); l.Status != 200 || len(list) != 3 || strings.Contains(string(l.Raw), "ps1.") {
		t.Errorf("list: %d %s", l.Status, l.Raw)
	}
	au := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/audit?event=drop", op, nil)
	actions := map[string]int{}
	entries, _ := au.Body["entries"].([]any)
	for _, e := range entries {
		m, _ := e.(map[string]any)
		if strings.HasPrefix(nodetest.Str(m, "action"), "pass.") {
			actions[nodetest.Str(m, "action")]++
			if nodetest.Str(m, "who") != "olga" {
				t.Errorf("audit entry by %q, want olga: %v", nodetest.Str(m, "who"), m)
			}
		}
	}
	if actions["pass.mint"] != 3 || actions["pass.revoke"] != 1 || strings.Contains(string(au.Raw), "ps1.") {
		t.Errorf("audit: %v %s", actions, au.Raw)
	}
}

// TestPassRedeemRetried: a join that redeems a pass and whose answer is
// lost is retried by the same user: the retry answers the admission again
// and spends no second use (a pass of one use would otherwise refuse its
// own holder as used up). Another user still finds the pass used up.
func TestPassRedeemRetried(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "drop", openSale(5, 1, 30*time.Minute, 0, 1))
	a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/drop/passes", map[string]string{"Authorization": "Bearer " + n.AdminToken}, []byte(`{"uses":1}`))
	if a.Status != http.StatusCreated {
		t.Fatalf("mint: %d %s", a.Status, a.Raw)
	}
	pass := nodetest.Str(a.Body, "pass")
	redeem := func(user string) nodetest.Answer {
		t.Helper()
		return join(t, n, "drop", map[string]string{"X-User-ID": user, tokens.PassHeader: pass})
	}
	for i := range 2 { // the first answer is lost; the client retries
		got := redeem("alice")
		if got.Status != http.StatusOK || nodetest.Str(got.Body, "admission_token") == "" || got.Body["pass_used"] != float64(1) {
			t.Fatalf("alice's redeem %d: %d %s, want admitted, 1 use spent", i+1, got.Status, got.Raw)
		}
	}
	problemOK(t, redeem("bob"), http.StatusForbidden, "pass_used_up")
	c, err := admission.NewPasses(r.Client(t)).Counts(context.Background(), "drop")
	if err != nil {
		t.Fatal(err)
	}
	if c.Redeemed != 1 || c.Refused != 1 {
		t.Fatalf("counts %+v, want 1 redeemed (alice, once) and 1 refused (bob)", c)
	}
}
