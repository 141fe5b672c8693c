package node_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/lifecycle"
)

// hookLog is a loopback webhook receiver: it verifies each signature,
// answers 500 to the first attempt of every event and keeps the events by
// id.
type hookLog struct {
	secret string
	mu     sync.Mutex
	tries  map[string]int
	events map[string]lifecycle.Event
	bad    int
}

func (h *hookLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	var e lifecycle.Event
	if lifecycle.Verify(h.secret, r.Header.Get(lifecycle.SignatureHeader), body, time.Now(), 5*time.Minute) != nil ||
		json.Unmarshal(body, &e) != nil || e.ID != r.Header.Get(lifecycle.EventIDHeader) {
		h.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	h.tries[e.ID]++
	if h.tries[e.ID] == 1 {
		w.WriteHeader(http.StatusInternalServerError) // every event is retried once
		return
	}
	h.events[e.ID] = e
}

// byType returns the delivered events of type typ.
func (h *hookLog) byType(typ string) []lifecycle.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []lifecycle.Event
	for _, e := range h.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// Two nodes, one webhook: every lifecycle event arrives signed, after a
// retry, once per id; your_turn names each admitted user; the stream holds
// each event once; the secret is never read back; the console's list shows
// the events.
func TestLifecycleWebhooksTwoNodes(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	cfg := nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), WebhookAllowHTTP: true, DataDir: t.TempDir()}) // shared secrets and keys
	n1, n2 := nodetest.Start(t, cfg), nodetest.Start(t, cfg)
	if err := n1.StartWorker(t.Context()); err != nil {
		t.Fatal(err)
	}
	const secret = "whsec-lifecycle-test-0123"
	hooks := &hookLog{secret: secret, tries: map[string]int{}, events: map[string]lifecycle.Event{}}
	srv := httptest.NewServer(hooks)
	t.Cleanup(srv.Close)

	sale := openSale(1, 1, 1500*time.Millisecond, 1, 1000)
	sale["webhooks"] = []map[string]any{{"url": srv.URL + "/anteroom", "secret": secret,
		"events": []string{"sale_opened", "window_closed", "paused", "resumed", "sold_out", "your_turn"}}}
	nodetest.CreateSale(t, n1, "hooked", sale)
	admin := map[string]string{"Authorization": "Bearer " + n1.AdminToken}
	got := nodetest.Call(t, http.MethodGet, n2.URL()+"/admin/events/hooked", admin, nil)
	if strings.Contains(string(got.Raw), secret) || !strings.Contains(string(got.Raw), `"secret_set":true`) {
		t.Fatalf("admin view shows the secret or hides that one is set: %s", got.Raw)
	}
	nodetest.WaitFor(t, "the second node to see the sale", 10*time.Second, func() bool {
		return nodetest.Call(t, http.MethodGet, n2.URL()+"/events/hooked/", nil, nil).Status == http.StatusOK
	})
	users := []string{"ann", "bob", "cat"}
	tickets := map[string]string{}
	for _, u := range users {
		j := nodetest.Call(t, http.MethodPost, n2.URL()+"/events/hooked/join", map[string]string{"X-User-ID": u}, nil)
		if j.Status != http.StatusOK {
			t.Fatalf("join %s: %d %s", u, j.Status, j.Raw)
		}
		tickets[u] = nodetest.Str(j.Body, "ticket")
	}
	for _, step := range []struct {
		n         *node.Node
		path, typ string
	}{{n1, "pause", "paused"}, {n2, "resume", "resumed"}} {
		if a := nodetest.Call(t, http.MethodPost, step.n.URL()+"/admin/events/hooked/"+step.path, admin, nil); a.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", step.path, a.Status, a.Raw)
		}
		nodetest.WaitFor(t, step.typ+" delivered", 30*time.Second, func() bool { return len(hooks.byType(step.typ)) == 1 })
	}
	nodetest.WaitFor(t, "your_turn for every user", 30*time.Second, func() bool { return len(hooks.byType("your_turn")) == len(users) })
	named := map[string]bool{}
	for _, e := range hooks.byType("your_turn") {
		u, _ := e.Data["user"].(string)
		named[u] = true
	}
	for _, u := range users {
		if !named[u] {
			t.Errorf("no your_turn names %s: %v", u, named)
		}
	}
	// ann buys the only unit: sold out.
	var token string
	nodetest.WaitFor(t, "ann's admission", 20*time.Second, func() bool {
		s := nodetest.Call(t, http.MethodGet, n1.URL()+"/events/hooked/status", map[string]string{"Authorization": "Bearer " + tickets["ann"]}, nil)
		token = nodetest.Str(s.Body, "admission_token")
		return token != ""
	})
	if c := nodetest.Call(t, http.MethodPost, n1.URL()+"/events/hooked/claim", map[string]string{"X-User-ID": "ann", "Authorization": "Bearer " + token}, nil); c.Status != http.StatusCreated {
		t.Fatalf("claim: %d %s", c.Status, c.Raw)
	}
	for _, typ := range []string{"sale_opened", "window_closed", "sold_out"} {
		nodetest.WaitFor(t, typ+" delivered", 30*time.Second, func() bool { return len(hooks.byType(typ)) == 1 })
	}
	closed := hooks.byType("window_closed")[0]
	seed, _ := hex.DecodeString(fmt.Sprint(closed.Data["seed"]))
	if sum := sha256.Sum256(seed); hex.EncodeToString(sum[:]) != closed.Data["seed_commitment"] {
		t.Errorf("window_closed: the seed does not match its commitment: %v", closed.Data)
	}
	hooks.mu.Lock()
	for id, n := range hooks.tries {
		if n < 2 {
			t.Errorf("event %s: %d attempts, want a retry after the 500", id, n)
		}
	}
	if hooks.bad != 0 {
		t.Errorf("%d requests failed signature verification", hooks.bad)
	}
	hooks.mu.Unlock()
	st, err := n1.JS.Stream(t.Context(), lifecycle.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(t.Context(), lifecycle.WithSubjects("hooked"))
	if err != nil {
		t.Fatal(err)
	}
	for subj, n := range info.State.Subjects {
		if want := uint64(1); !strings.HasSuffix(subj, "your_turn") && n != want {
			t.Errorf("%s: %d messages on the stream, want 1", subj, n)
		}
	}
	if n := info.State.Subjects[lifecycle.Subject("hooked", "your_turn")]; n != uint64(len(users)) {
		t.Errorf("your_turn: %d messages on the stream, want %d", n, len(users))
	}
	list := nodetest.Call(t, http.MethodGet, n2.URL()+"/admin/events/hooked/lifecycle", admin, nil)
	if evs, _ := list.Body["events"].([]any); list.Status != http.StatusOK || len(evs) < 8 {
		t.Errorf("console list: %d with %d events, want at least 8: %s", list.Status, len(evs), list.Raw)
	}
}

// Webhooks must be https unless the node allows http by name, and a change
// sent without the secret keeps the stored one.
func TestWebhookSettings(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL()})
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	sale := openSale(10, 1, 10*time.Minute, 0, 10)
	sale["webhooks"] = []map[string]any{{"url": "http://127.0.0.1:9/hook", "secret": "0123456789abcdef"}}
	raw, _ := json.Marshal(sale)
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/plain", admin, raw); a.Status != http.StatusBadRequest || !strings.Contains(string(a.Raw), "https") {
		t.Fatalf("http webhook: %d %s, want 400 naming https", a.Status, a.Raw)
	}
	if _, err := n.Events.Get(t.Context(), "plain"); err == nil {
		t.Fatal("a refused change was stored")
	}
	sale["webhooks"] = []map[string]any{{"url": "https://shop.example/hook", "secret": "0123456789abcdef"}}
	nodetest.CreateSale(t, n, "plain", sale)
	body := []byte(`{"name":"renamed","webhooks":[{"url":"https://shop.example/hook","events":["paused"]}]}`)
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/plain", admin, body); a.Status != http.StatusOK {
		t.Fatalf("update: %d %s", a.Status, a.Raw)
	}
	cfg, err := n.Events.Get(t.Context(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Webhooks) != 1 || cfg.Webhooks[0].Secret != "0123456789abcdef" || cfg.Webhooks[0].Events[0] != "paused" {
		t.Errorf("stored webhooks %+v, want the secret kept and events updated", cfg.Webhooks)
	}
}
