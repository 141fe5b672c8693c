package node_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/report"
	"github.com/anteroom/anteroom/web/protect"
)

// siteverifyStub plays a captcha provider's siteverify API on loopback:
// tokens "pass-*" pass once (a second use is a duplicate, as the providers
// answer), "fail" fails, "hang" never answers before the caller gives up.
type siteverifyStub struct {
	secret string
	mu     sync.Mutex
	spent  map[string]bool
	calls  []map[string]string
}

func (s *siteverifyStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	tok := r.PostForm.Get("response")
	s.mu.Lock()
	s.calls = append(s.calls, map[string]string{"secret": r.PostForm.Get("secret"), "response": tok, "remoteip": r.PostForm.Get("remoteip")})
	s.mu.Unlock()
	answer := func(ok bool, codes ...string) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"success": ok, "error-codes": codes})
	}
	switch {
	case r.Method != http.MethodPost || r.PostForm.Get("secret") != s.secret:
		answer(false, "invalid-input-secret")
	case tok == "hang":
		<-r.Context().Done() // the node's timeout ends the call
	case strings.HasPrefix(tok, "pass-"):
		s.mu.Lock()
		used := s.spent[tok]
		s.spent[tok] = true
		s.mu.Unlock()
		if used {
			answer(false, "timeout-or-duplicate")
			return
		}
		answer(true)
	default:
		answer(false, "invalid-input-response")
	}
}

// TestCaptchaOnJoin checks the captcha beside the proof of work against a
// local siteverify stub (the network boundary; Redis and JetStream are
// real): a join needs a token the provider passes; a missing, failed,
// replayed or unverifiable token is refused with problem+json (fail
// closed) and counted in the report; the secret reaches siteverify and is
// never shown back; the page's CSP allows the widget; bad settings are
// refused.
func TestCaptchaOnJoin(t *testing.T) {
	stub := &siteverifyStub{secret: "0x4AAAAAAAtest-secret-" + fmt.Sprint(time.Now().UnixNano()), spent: map[string]bool{}}
	srv := httptest.NewServer(stub)
	t.Cleanup(srv.Close)
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{
		RedisURL: r.URL(), NATSURL: ns.URL(), CaptchaSiteverifyURL: srv.URL, CaptchaTimeout: 300 * time.Millisecond,
	}))
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	const ev = "cap"

	sale := openSale(10, 1, time.Minute, 0, 100)
	for _, bad := range []map[string]any{
		{"provider": "recaptcha", "site_key": "k", "secret": stub.secret},
		{"provider": "turnstile", "site_key": "1x00000000000000000000AA"},
		{"provider": "hcaptcha", "site_key": "<script>", "secret": stub.secret},
	} {
		sale["limits"] = map[string]any{"captcha": bad}
		raw, _ := json.Marshal(sale)
		a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/"+ev, admin, raw)
		problemOK(t, a, http.StatusBadRequest, "bad_request")
		if !strings.Contains(nodetest.Str(a.Body, "detail"), "limits.captcha.") {
			t.Errorf("misconfiguration %v: detail %q does not name the field", bad, nodetest.Str(a.Body, "detail"))
		}
	}
	sale["limits"] = map[string]any{"captcha": map[string]any{"provider": "turnstile", "site_key": "1x00000000000000000000AA", "secret": stub.secret}}
	nodetest.CreateSale(t, n, ev, sale)

	got := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/"+ev, admin, nil)
	if strings.Contains(string(got.Raw), stub.secret) || !strings.Contains(string(got.Raw), `"secret_set":true`) {
		t.Errorf("admin view shows the secret or hides that it is set: %s", got.Raw)
	}
	pub := nodetest.Call(t, http.MethodGet, n.URL()+"/events/"+ev, nil, nil)
	if c, _ := pub.Body["captcha"].(map[string]any); nodetest.Str(c, "provider") != "turnstile" || nodetest.Str(c, "site_key") != "1x00000000000000000000AA" || strings.Contains(string(pub.Raw), stub.secret) {
		t.Errorf("public event captcha: %s", pub.Raw)
	}
	page := nodetest.Call(t, http.MethodGet, n.URL()+"/e/"+ev, nil, nil)
	if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-src https://challenges.cloudflare.com") || !strings.Contains(csp, "script-src 'self' https://challenges.cloudflare.com") || strings.Contains(csp, "'unsafe-inline' https://challenges") {
		t.Errorf("page CSP %q does not allow the Turnstile widget", csp)
	}

	join := func(user, token string) nodetest.Answer {
		h := map[string]string{"X-User-ID": user}
		if token != "" {
			h[protect.CaptchaHeader] = token
		}
		return nodetest.Call(t, http.MethodPost, n.URL()+"/events/"+ev+"/join", h, nil)
	}
	problemOK(t, join("a", ""), http.StatusForbidden, "captcha_required")
	problemOK(t, join("a", "fail"), http.StatusForbidden, "captcha_failed")
	if a := join("a", "pass-1"); a.Status != http.StatusOK || nodetest.Str(a.Body, "ticket") == "" {
		t.Fatalf("join with a passed captcha: %d %s", a.Status, a.Raw)
	}
	replay := join("b", "pass-1")
	problemOK(t, replay, http.StatusForbidden, "captcha_failed")
	if !strings.Contains(nodetest.Str(replay.Body, "detail"), "already used") {
		t.Errorf("replayed token: detail %q", nodetest.Str(replay.Body, "detail"))
	}
	slow := join("c", "hang")
	problemOK(t, slow, http.StatusServiceUnavailable, "captcha_unavailable")
	if slow.Header.Get("Retry-After") == "" {
		t.Error("captcha_unavailable without Retry-After")
	}
	stub.mu.Lock()
	calls := len(stub.calls)
	for _, c := range stub.calls {
		if c["secret"] != stub.secret || c["remoteip"] != "127.0.0.1" {
			t.Errorf("siteverify got %v, want the event's secret and the caller's address", c)
		}
	}
	stub.mu.Unlock()
	if calls != 4 { // no call without a token
		t.Errorf("siteverify called %d times, want 4", calls)
	}

	want := []report.Refusal{{Reason: "join.captcha_failed", Count: 2}, {Reason: "join.captcha_required", Count: 1}, {Reason: "join.captcha_unavailable", Count: 1}}
	var rep report.Report
	nodetest.WaitFor(t, "the refusals in the report", 10*time.Second, func() bool {
		rep = getReport(t, n, ev)
		return reflect.DeepEqual(rep.Refusals, want)
	})
}
