package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/pushstub"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/push"
)

// TestWebPushYourTurn: a node with Web Push on (a VAPID key file, the
// local stub's host allowed over http by name). A shopper's page saves its
// subscription with the ticket; when the frontier reaches them the node's
// PushDeliverer, from the your_turn event on the lifecycle stream (no
// webhook asks for it), sends one notice: VAPID-signed by the node's key,
// encrypted for the subscription, decrypted by the stub, naming the event
// and saying it is their turn. A subscription with another event's ticket
// and an oversized one are 400 problem+json and save nothing.
func TestWebPushYourTurn(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	keyFile := filepath.Join(t.TempDir(), "vapid.key")
	key, err := push.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(),
		PushVAPIDKey: keyFile, PushSubject: "mailto:ops@shop.example", PushHosts: []string{"127.0.0.1"}, PushAllowHTTP: true}))
	pub := nodetest.Call(t, http.MethodGet, n.URL()+"/events/none/push", nil, nil)
	if pub.Status != http.StatusNotFound {
		t.Errorf("GET push of an unknown event: %d, want 404", pub.Status)
	}
	nodetest.CreateSale(t, n, "pushed", openSale(10, 1, 30*time.Minute, 0, 5)) // nobody admitted for 30 min
	nodetest.CreateSale(t, n, "other", openSale(10, 1, 2*time.Second, 0, 5))
	pub = nodetest.Call(t, http.MethodGet, n.URL()+"/events/pushed/push", nil, nil)
	vapid := nodetest.Str(pub.Body, "public_key")
	if pub.Status != http.StatusOK || len(vapid) != 87 {
		t.Fatalf("GET push: %d %s, want the VAPID public key", pub.Status, pub.Raw)
	}
	stub, err := pushstub.Start(vapid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stub.Close)
	ticket := func(ev, user string) string {
		j := join(t, n, ev, map[string]string{"X-User-ID": user})
		if j.Status != http.StatusOK {
			t.Fatalf("join %s: %d %s", ev, j.Status, j.Raw)
		}
		return nodetest.Str(j.Body, "ticket")
	}
	mine, others := ticket("other", "ann"), ticket("pushed", "bob")
	subscribe := func(ev, tk string, sub map[string]any) nodetest.Answer {
		body, err := json.Marshal(sub)
		if err != nil {
			t.Fatal(err)
		}
		return nodetest.Call(t, http.MethodPost, n.URL()+"/events/"+ev+"/push", map[string]string{"Authorization": "Bearer " + tk, "Content-Type": "application/json"}, body)
	}
	sub := stub.Subscription()
	// Bad input first: nothing may be saved.
	problemOK(t, subscribe("other", others, sub), http.StatusBadRequest, "bad_request")
	big := stub.Subscription()
	big["title"] = strings.Repeat("x", push.MaxSubscription)
	problemOK(t, subscribe("other", mine, big), http.StatusBadRequest, "bad_request")
	rdb := r.Client(t)
	if keys, _ := rdb.Keys(context.Background(), "ar:{other}:push:*").Result(); len(keys) != 0 {
		t.Fatalf("refused subscriptions saved %v", keys)
	}
	sub["title"], sub["body"] = "✓ Your turn — other", "Come back to claim"
	if a := subscribe("other", mine, sub); a.Status != http.StatusNoContent {
		t.Fatalf("subscribe: %d %s", a.Status, a.Raw)
	}
	nodetest.WaitFor(t, "the push notice", 60*time.Second, func() bool { return len(stub.Messages()) > 0 })
	msgs := stub.Messages()
	if len(msgs) != 1 || msgs[0].Err != nil {
		t.Fatalf("stub received %+v, want one valid message", msgs)
	}
	var got push.Message
	if err := msgs[0].Decode(&got); err != nil {
		t.Fatal(err)
	}
	if want := (push.Message{Type: "your_turn", Event: "other", URL: "/e/other", Title: "✓ Your turn — other", Body: "Come back to claim"}); got != want {
		t.Errorf("decrypted notice %+v, want %+v", got, want)
	}
	if msgs[0].Subject != "mailto:ops@shop.example" {
		t.Errorf("VAPID sub %q", msgs[0].Subject)
	}
}
