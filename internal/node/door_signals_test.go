package node_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/web/protect"
)

// TestDoorRequiresSignal: a door rule can require a signal from its
// trusted source (signals.phone): a join without the shop-signed phone,
// with a bare value, or with one signed for another user is 403 blocked;
// with the shop's signature for this sale and user it joins.
func TestDoorRequiresSignal(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	sale := openSale(10, 1, 0, 0, 1000)
	sale["signals"] = map[string]any{"phone": map[string]any{"source": "signed_header"}}
	sale["shop"] = map[string]any{"secret": shopSecret}
	sale["door"] = map[string]any{"rules": []map[string]string{
		{"name": "verified-phone", "when": `request.path.endsWith("/join") && !signals.phone`, "then": "block"}}}
	nodetest.CreateSale(t, n, "phones", sale)
	phone := func(user, v string) string {
		return protect.SignSignal(shopSecret, time.Now(), "phones", user, "phone", v)
	}
	for i, s := range []struct {
		user, header string
		status       int
	}{
		{"ann", "", http.StatusForbidden},
		{"ann", "value=abc", http.StatusForbidden},
		{"ann", phone("bob", "p-1"), http.StatusForbidden},
		{"ann", phone("ann", "p-1"), http.StatusOK},
	} {
		hdr := map[string]string{"X-User-ID": s.user}
		if s.header != "" {
			hdr["X-Phone-Hash"] = s.header
		}
		a := join(t, n, "phones", hdr)
		if a.Status != s.status || s.status == http.StatusForbidden && nodetest.Str(a.Body, "code") != "blocked" {
			t.Fatalf("step %d: %d %s, want %d", i, a.Status, a.Raw, s.status)
		}
	}
}
