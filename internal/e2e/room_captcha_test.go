package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
)

// turnstileAPI is the address captcha.js loads Cloudflare Turnstile from.
const turnstileAPI = "https://challenges.cloudflare.com/turnstile/v0/api.js?render=explicit"

// turnstileStub stands in for Turnstile's api.js: window.turnstile.render
// draws a frame from the provider's origin (as the real widget does) and a
// checkbox; ticking it hands the token to the page's callback.
const turnstileStub = `"use strict";
window.turnstile = {
  render(el, opts) {
    const f = document.createElement("iframe");
    f.src = "https://challenges.cloudflare.com/stub-widget?sitekey=" + encodeURIComponent(opts.sitekey);
    f.title = "stub challenge";
    const box = document.createElement("input");
    box.type = "checkbox";
    box.id = "stubCheck";
    box.dataset.sitekey = opts.sitekey;
    box.addEventListener("change", () => opts.callback(%q));
    const l = document.createElement("label");
    l.append(box, " I am human (stub)");
    el.append(f, l);
    return "stub-widget";
  },
  reset() {}
};
`

// solveStub ticks the stub widget's box as a person would, and ticks it
// again through the DOM should the click have missed: the widget's frame
// loads beside the box, and on a loaded machine a click aimed before the
// layout settled can land beside it (CI: the queue card never came, the
// join still waiting for the widget's token).
func solveStub(p *tab) {
	p.t.Helper()
	p.do(chromedp.Click(chromedp.ID("stubCheck")))
	ticked := `document.getElementById("stubCheck").checked`
	if !eval[bool](p, ticked) {
		p.t.Logf("tab %s: the click missed the stub's box; ticking it through the DOM", p.name)
		eval[bool](p, `document.getElementById("stubCheck").click(), true`)
	}
}

// providerStub answers the page's requests to challenges.cloudflare.com
// through the browser's Fetch domain (nothing leaves the machine) and
// records their addresses.
type providerStub struct {
	mu   sync.Mutex
	urls []string
}

func (s *providerStub) requested() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.urls...)
}

// interceptTurnstile serves tab p's requests to the Turnstile origin: the
// stub script for api.js, a small page for the widget's frame, 404 else.
func interceptTurnstile(t *testing.T, p *tab, token string) *providerStub {
	t.Helper()
	s := &providerStub{}
	paused := chromedp.Events(p.ctx, fetch.RequestPaused)
	if _, err := chromedp.Call(p.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "https://challenges.cloudflare.com/*"}}}); err != nil {
		t.Fatalf("fetch.enable: %v", err)
	}
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			s.mu.Lock()
			s.urls = append(s.urls, ev.Request.URL)
			s.mu.Unlock()
			code, ctype, body := int64(404), "text/plain", "not stubbed"
			switch {
			case ev.Request.URL == turnstileAPI:
				code, ctype, body = 200, "text/javascript", fmt.Sprintf(turnstileStub, token)
			case strings.HasPrefix(ev.Request.URL, "https://challenges.cloudflare.com/stub-widget?"):
				code, ctype, body = 200, "text/html", "<!doctype html><p>stub challenge</p>"
			}
			_, err := chromedp.Call(p.ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID, ResponseCode: code,
				ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: ctype}}, Body: []byte(body)})
			if err != nil && p.ctx.Err() == nil {
				t.Errorf("fulfill %s: %v", ev.Request.URL, err)
			}
		}
	}()
	return s
}

// siteverify plays Turnstile's siteverify on loopback: it passes each
// token a stub widget hands out, once; a second use is a duplicate.
type siteverify struct {
	secret string
	mu     sync.Mutex
	tokens map[string]bool // token -> spent
	calls  []string        // "secret response" of each call
}

func (s *siteverify) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	secret, tok := r.PostForm.Get("secret"), r.PostForm.Get("response")
	s.mu.Lock()
	s.calls = append(s.calls, secret+" "+tok)
	spent, known := s.tokens[tok]
	ok, code := false, "invalid-input-response"
	switch {
	case r.Method != http.MethodPost || secret != s.secret:
		code = "invalid-input-secret"
	case known && spent:
		code = "timeout-or-duplicate"
	case known:
		ok, s.tokens[tok] = true, true
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	answer := map[string]any{"success": ok}
	if !ok {
		answer["error-codes"] = []string{code}
	}
	_ = json.NewEncoder(w).Encode(answer)
}

// issue makes a token the stub siteverify will pass once.
func (s *siteverify) issue(t *testing.T) string {
	t.Helper()
	tok := "stub-token-" + randHex(t, 12)
	s.mu.Lock()
	s.tokens[tok] = false
	s.mu.Unlock()
	return tok
}

func (s *siteverify) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// watchCSP records the page's Content-Security-Policy violations in
// window.__csp, from before any of its scripts runs.
func watchCSP(t *testing.T, p *tab) {
	t.Helper()
	src := `window.__csp = []; document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI));`
	if _, err := chromedp.Call(p.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src}); err != nil {
		t.Fatalf("watch CSP: %v", err)
	}
}

func randHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// widgetShown is true once the stub widget is drawn where the visitor
// sees it.
const widgetShown = `(() => { const c = document.getElementById("stubCheck"); return !!c && c.offsetParent !== null; })()`

// TestRoomCaptcha: in a sale that asks for Turnstile, the waiting room's
// join gets 403 captcha_required, loads captcha.js and the provider's
// script (intercepted in the browser: the network boundary), shows the
// widget, sends its token in X-Captcha, and the node has siteverify (a
// loopback stub) pass it with the sale's secret; the visitor ends in the
// queue, with no CSP violation on the way, and the token is spent. An
// operator's template without #captchaBox still shows the widget.
func TestRoomCaptcha(t *testing.T) {
	const siteKey = "1x00000000000000000000AA"
	verify := &siteverify{secret: "0x4AAAAAAA-e2e-" + randHex(t, 12), tokens: map[string]bool{}}
	srv := httptest.NewServer(verify)
	t.Cleanup(srv.Close)
	n := startNode(t, func(c node.Config) node.Config { c.CaptchaSiteverifyURL = srv.URL; return c })
	browser := startBrowser(t)
	now := time.Now().UTC().Truncate(time.Second)
	nodetest.CreateSale(t, n, "cap", map[string]any{"name": "Captcha drop", "supply": 5, "mode": "fcfs",
		"prequeue_opens_at": now.Add(-time.Minute), "starts_at": now.Add(-time.Second), "ends_at": now.Add(time.Hour), "admit_rate_per_second": 10,
		"limits": map[string]any{"captcha": map[string]any{"provider": "turnstile", "site_key": siteKey, "secret": verify.secret}}})

	p := newTab(t, browser, "room-captcha", phoneW, phoneH, nil)
	watchCSP(t, p)
	token := verify.issue(t)
	provider := interceptTurnstile(t, p, token)
	p.do(chromedp.Navigate(n.URL() + "/e/cap"))
	p.waitJS("the join button", joinEnabled, 10*time.Second)
	if got := provider.requested(); len(got) != 0 {
		t.Errorf("the page loaded %q before join asked for a captcha", got)
	}
	p.do(chromedp.Click(chromedp.ID("join")))
	p.waitJS("the captcha widget in #captchaBox", widgetShown+` && !!document.querySelector("#captchaBox #stubCheck")`, 10*time.Second)
	if got := provider.requested(); len(got) == 0 || got[0] != turnstileAPI {
		t.Errorf("provider requests %q, want the Turnstile script %s first", got, turnstileAPI)
	}
	frame := "https://challenges.cloudflare.com/stub-widget?sitekey=" + siteKey
	nodetest.WaitFor(t, "the widget's frame from the provider's origin", 10*time.Second, func() bool {
		return slices.Contains(provider.requested(), frame)
	})
	if got := eval[string](p, `document.getElementById("stubCheck").dataset.sitekey`); got != siteKey {
		t.Errorf("the widget got site key %q, want %q", got, siteKey)
	}
	if !eval[bool](p, `!!document.querySelector('script[src="/assets/captcha.js"]')`) {
		t.Error("the page did not load /assets/captcha.js")
	}
	if got := verify.seen(); len(got) != 0 {
		t.Errorf("siteverify called %q before the widget was solved", got)
	}
	p.shot("captcha")

	solveStub(p)
	p.waitJS("the queue card", `!document.getElementById("queue").hidden`, 10*time.Second)
	if got, want := verify.seen(), []string{verify.secret + " " + token}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("siteverify calls %q, want one with the secret and the stub's token", got)
	}
	msgs := catalog(t, "en")
	if got := p.text("state"); got != msgs["st_waiting"] && got != msgs["st_admitted"] {
		t.Errorf("state %q, want waiting or admitted", got)
	}
	// st is the answer of GET /status, which needs the ticket join set.
	if !eval[bool](p, `!!me && me.seq === 1 && !!st && ["waiting", "admitted"].includes(st.state)`) {
		t.Errorf("no place in the queue after the join: %s", eval[string](p, `JSON.stringify({me, st})`))
	}
	if p.visible("captchaBox") {
		t.Error("the captcha widget is still shown after joining")
	}
	if got := eval[[]string](p, `window.__csp`); len(got) != 0 {
		t.Errorf("CSP violations: %q", got)
	}
	p.shot("queued")

	// The token is good for one join: siteverify says it is a duplicate.
	again := nodetest.Call(t, http.MethodPost, n.URL()+"/events/cap/join", map[string]string{"X-Captcha": token}, nil)
	if again.Status != http.StatusForbidden || nodetest.Str(again.Body, "code") != "captcha_failed" {
		t.Errorf("the token again: %d %s, want 403 captcha_failed", again.Status, again.Raw)
	}

	// An operator's template may leave out #captchaBox: the widget then
	// goes after the join button, where the visitor sees it.
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	tpl, _ := json.Marshal(map[string]string{"template": `<!doctype html><html lang="{{.Lang}}" dir="{{.Dir}}"><head><meta name="viewport" content="width=device-width"></head>
<body><h1 id="name">{{.Event.Name}}</h1><button id="join">{{index .T "join"}}</button><p id="state"></p>
{{.Runtime}}</body></html>`})
	d := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/cap/page", admin, tpl)
	if d.Status != http.StatusOK {
		t.Fatalf("save template: %d %s", d.Status, d.Raw)
	}
	if pub := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/cap/page/publish", admin, []byte(`{"draft_sha256":"`+nodetest.Str(d.Body, "draft_sha256")+`"}`)); pub.Status != http.StatusOK {
		t.Fatalf("publish: %d %s", pub.Status, pub.Raw)
	}
	q := newTab(t, browser, "room-captcha-template", phoneW, phoneH, nil)
	watchCSP(t, q)
	token2 := verify.issue(t)
	interceptTurnstile(t, q, token2)
	q.do(chromedp.Navigate(n.URL() + "/e/cap"))
	q.waitJS("the template's join button", `!!document.getElementById("join") && !document.getElementById("join").disabled`, 10*time.Second)
	q.do(chromedp.Click(chromedp.ID("join")))
	q.waitJS("the captcha widget on the template's page", widgetShown, 10*time.Second)
	q.shot("template-captcha")
	solveStub(q)
	q.waitJS("the join", `!!me && !!st && ["waiting", "admitted"].includes(st.state)`, 10*time.Second)
	if got := eval[[]string](q, `window.__csp`); len(got) != 0 {
		t.Errorf("CSP violations on the template's page: %q", got)
	}
	if got := verify.seen(); len(got) != 3 || got[2] != verify.secret+" "+token2 {
		t.Errorf("siteverify calls %q, want the second visitor's token third", got)
	}
}
