package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// scripts turns the page's JavaScript on or off.
func (p *tab) scripts(on bool) {
	p.t.Helper()
	if _, err := chromedp.Call(p.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: !on}); err != nil {
		p.t.Fatalf("tab %s: turn JavaScript %v: %v", p.name, map[bool]string{true: "on", false: "off"}[on], err)
	}
}

// newNoJSTab is newTab with JavaScript turned off in the page, as a
// browser whose user disabled it (DevTools can still read the page).
func newNoJSTab(t *testing.T, browser context.Context, name string, width, height int64) *tab {
	t.Helper()
	p := newTab(t, browser, name, width, height, nil)
	p.scripts(false)
	return p
}

// submit clicks the form button with id and returns the HTTP status of
// the page it leads to (after redirects).
func (p *tab) submit(id string) int {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, nodetest.Patience)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID(id)))
	if err != nil {
		p.t.Fatalf("tab %s: submit %s: %v", p.name, id, err)
	}
	return int(resp.Status)
}

// attr returns attribute name of the first element matching css, "" when
// absent.
func (p *tab) attr(css, name string) string {
	p.t.Helper()
	return eval[string](p, fmt.Sprintf(`(document.querySelector(%q) || {getAttribute: () => ""}).getAttribute(%q) || ""`, css, name))
}

// cookieHeader is the Cookie header the tab's browser sends to u.
func (p *tab) cookieHeader(u string) string {
	p.t.Helper()
	res, err := chromedp.Call(p.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{u}})
	if err != nil {
		p.t.Fatalf("tab %s: cookies: %v", p.name, err)
	}
	var parts []string
	for _, c := range res.Cookies {
		parts = append(parts, c.Name+"="+c.Value)
	}
	return strings.Join(parts, "; ")
}

var claimIDText = regexp.MustCompile(`Claim (\S+)`)

// TestNoJSWholeSale: a shopper whose browser runs no JavaScript completes
// a sale. Opening the normal waiting-room address leads to the basic page
// (room.html's <noscript>); they join with its form, wait in the queue
// while the page reloads itself by meta refresh at the status poll's
// pace (never under a second), are admitted, and claim with the form: 201,
// the granted page, and the node holds the claim for their user, confirmed
// by the order worker. The same form sent again (a double submit or a
// resubmitted reload) answers the same claim (200), never a second one;
// the next render's form is a new claim and is refused 409 limit_reached
// (per_user_limit 1), naming the claim held. axe-core checks every state
// on the way.
func TestNoJSWholeSale(t *testing.T) {
	n := startNode(t)
	if err := n.StartWorker(context.Background()); err != nil {
		t.Fatalf("order worker: %v", err)
	}
	browser := startBrowser(t)
	axeSource(t)
	nodetest.CreateSale(t, n, "plain", sale{supply: 3, name: "Plain drop", opensIn: -3 * time.Second, startsIn: -2 * time.Second, rate: 0.5})
	// People ahead, so the shopper waits through several refreshes.
	for range 4 {
		if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/plain/join", nil, nil); a.Status != http.StatusOK {
			t.Fatalf("join ahead: %d %s", a.Status, a.Raw)
		}
	}
	msgs := catalog(t, "en")
	base := n.URL() + "/e/plain/basic"

	p := newNoJSTab(t, browser, "nojs", phoneW, phoneH)
	p.do(chromedp.Navigate(n.URL() + "/e/plain"))
	p.waitJS("the basic page", `location.pathname === "/e/plain/basic" && document.getElementById("join") !== null`, 0)
	if got := eval[int](p, `document.scripts.length`); got != 0 {
		t.Errorf("the basic page has %d scripts, want none", got)
	}
	p.axeNoJS("the lobby")
	p.shot("lobby")

	// Count the documents loaded from the join on, as they load: the
	// refreshes are the node's pace, and a slow machine's checks below
	// must not be able to miss them.
	var navMu sync.Mutex
	var navs []time.Duration
	joined := time.Now()
	if err := chromedp.Listen(p.ctx, func(ev any) {
		if e, ok := ev.(*page.EventFrameNavigated); ok && e.Frame.ParentID == "" && strings.HasSuffix(e.Frame.URL, "/e/plain/basic") {
			navMu.Lock()
			navs = append(navs, time.Since(joined).Round(time.Millisecond))
			navMu.Unlock()
		}
	}); err != nil {
		t.Fatalf("listen to the tab: %v", err)
	}
	if status := p.submit("join"); status != http.StatusOK {
		t.Fatalf("join form: the page after it answered %d, want 200 (after the 303)", status)
	}
	p.waitJS("the queue", fmt.Sprintf(`document.getElementById("state") !== null && document.getElementById("state").textContent === %q`, msgs["st_waiting"]), 0)
	if pos := p.text("pos"); pos != "5" {
		t.Errorf("position %q, want 5 (four joined before)", pos)
	}
	if eta := p.text("eta"); eta == "—" || eta == "" {
		t.Errorf("no ETA while waiting: %q", eta)
	}
	refresh := p.attr(`meta[http-equiv="refresh"]`, "content")
	secs, target, ok := strings.Cut(refresh, "; url=")
	if !ok || target != "/e/plain/basic" || secs < "1" {
		t.Errorf("meta refresh %q, want \"N; url=/e/plain/basic\" with N ≥ 1", refresh)
	}
	if got := p.text("toggle"); got != msgs["b_stop"] {
		t.Errorf("the refresh's off switch reads %q, want %q", got, msgs["b_stop"])
	}
	p.axeNoJS("waiting in the queue")
	p.shot("waiting")

	// Wait for admission: the join's page, then the meta refresh's.
	nodetest.WaitFor(t, "admission through meta refreshes", 60*time.Second, func() bool {
		return eval[bool](p, `document.getElementById("claim") !== null`)
	})
	navMu.Lock()
	loads := slices.Clone(navs)
	navMu.Unlock()
	t.Logf("pages loaded from the join to admission, at: %v", loads)
	if len(loads) < 3 {
		t.Errorf("%d page loads from the join to admission, want the waiting page refreshed at least twice", len(loads))
	}
	if got := p.text("state"); got != msgs["st_admitted"] {
		t.Errorf("admitted state %q, want %q", got, msgs["st_admitted"])
	}
	p.axeNoJS("admitted")
	p.shot("admitted")
	form, idem := p.attr(`input[name="form"]`, "value"), p.attr(`input[name="idem"]`, "value")
	if form == "" || !strings.HasPrefix(idem, "form-") {
		t.Fatalf("claim form fields form=%q idem=%q", form, idem)
	}
	cookies := p.cookieHeader(base)

	if status := p.submit("claim"); status != http.StatusCreated {
		t.Errorf("claim form answered %d, want 201", status)
	}
	p.waitJS("the granted page", `(document.getElementById("result") || {dataset: {}}).dataset.kind === "granted"`, 0)
	m := claimIDText.FindStringSubmatch(p.text("result"))
	if m == nil {
		t.Fatalf("granted page %q names no claim", p.text("result"))
	}
	claimID := m[1]
	p.axeNoJS("granted")
	p.shot("granted")

	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	nodetest.WaitFor(t, "the order worker's confirmation", 20*time.Second, func() bool {
		look := nodetest.Call(t, http.MethodGet, n.URL()+"/events/plain/claims/"+claimID, admin, nil)
		return look.Status == http.StatusOK && nodetest.Str(look.Body, "status") == "confirmed"
	})

	// The same form again: the same claim, 200.
	again := postForm(t, base+"/claim", cookies, url.Values{"form": {form}, "idem": {idem}})
	if again.status != http.StatusOK || !strings.Contains(again.body, "Claim "+claimID) {
		t.Errorf("the same form sent again: %d, want 200 with claim %s; body %.400s", again.status, claimID, again.body)
	}
	// A new render's form is a new claim: the per-user limit refuses it.
	p.do(chromedp.Navigate(base))
	p.waitJS("the admitted page again", `document.getElementById("claim") !== null`, 0)
	if idem2 := p.attr(`input[name="idem"]`, "value"); idem2 == idem {
		t.Errorf("a new render kept the idempotency key %q", idem)
	}
	if status := p.submit("claim"); status != http.StatusConflict {
		t.Errorf("a second claim answered %d, want 409", status)
	}
	if kind := p.attr("#result", "data-kind"); kind != "limit_reached" || !strings.Contains(p.text("result"), claimID) {
		t.Errorf("second claim: %s %q, want limit_reached naming %s", kind, p.text("result"), claimID)
	}
	p.axeNoJS("the per-user limit")
	p.shot("limit-reached")

	ev := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/plain", admin, nil)
	stock, _ := ev.Body["live"].(map[string]any)["stock"].(map[string]any)
	if granted, _ := stock["granted"].(float64); granted != 1 {
		t.Errorf("the sale granted %v units, want 1: %s", stock["granted"], ev.Raw)
	}
}

// formAnswer is an HTML answer to a form post.
type formAnswer struct {
	status int
	header http.Header
	body   string
}

// postForm posts form to u as a browser form would, with cookie (a
// Cookie header) and extra headers hdr, following no redirect.
func postForm(t *testing.T, u, cookie string, form url.Values, hdr ...string) formAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return formAnswer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// axeNoJS runs axe-core (WCAG 2.2 AA, axeTags) on the basic page as it is
// now and fails the test with every violation, like axe. JavaScript is
// off for the page's own scripts only: DevTools still injects axe-core.
//
// A page that refreshes itself is checked with every rule but one,
// axe-core's meta-refresh (WCAG 2.2.1, Timing Adjustable), which flags
// any delayed refresh whatever the page offers: WCAG 2.2.1 is met by the
// "turn off" option, the refresh's off switch, which must be the page's
// first focusable element (checked here) and whose page, without the
// refresh, passes every rule (TestAxeNoJSEveryStateAndLanguage checks it
// in every state). If the refresh reloads the page during the check, the
// check runs again on the new page.
func (p *tab) axeNoJS(what string) {
	p.t.Helper()
	src := axeSource(p.t)
	// axe-core runs on timers, which run only while scripts may: allow
	// them for the check. The basic page has no script to run (the tests
	// check document.scripts), so nothing else changes.
	p.scripts(true)
	defer p.scripts(false)
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(p.ctx, nodetest.Patience)
		vs, first, refreshing, err := runAxeNoJS(ctx, src)
		cancel()
		if err != nil {
			if try < 5 {
				continue // the meta refresh loaded a new page meanwhile
			}
			p.t.Fatalf("tab %s: axe-core on %s: %v", p.name, what, err)
		}
		if refreshing && first != "toggle" {
			p.t.Errorf("axe: %s, %s: the page refreshes itself, and its first focusable element is %q, not the refresh's off switch (#toggle)", p.name, what, first)
		}
		for _, v := range vs {
			p.t.Errorf("axe: %s, %s: %s", p.name, what, v)
		}
		return
	}
}

// runAxeNoJS injects axe-core and runs it once on one document: its
// violations, the id of the first focusable element and whether the page
// refreshes itself; an error when the document changed meanwhile.
func runAxeNoJS(ctx context.Context, src string) ([]axeViolation, string, bool, error) {
	origin, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.timeOrigin`))
	if err != nil {
		return nil, "", false, err
	}
	js := `(() => {
		if (typeof axe !== "object") { ` + src + `
		}
		const refreshing = document.querySelector('meta[http-equiv="refresh"]') !== null;
		const first = document.querySelector("a[href], button, input:not([type=hidden]), select, textarea");
		const opts = {runOnly: {type: "tag", values: ` + axeTags + `}, resultTypes: ["violations"]};
		if (refreshing) opts.rules = {"meta-refresh": {enabled: false}};
		return axe.run(document, opts).then((r) => ({origin: performance.timeOrigin, refreshing, first: first ? first.id : "", violations: r.violations}));
	})()`
	type result struct {
		Origin     float64        `json:"origin"`
		Refreshing bool           `json:"refreshing"`
		First      string         `json:"first"`
		Violations []axeViolation `json:"violations"`
	}
	r, err := chromedp.Run(ctx, chromedp.Evaluate[result](js, chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, "", false, err
	}
	if r.Origin != origin {
		return nil, "", false, fmt.Errorf("the page reloaded during the check")
	}
	return r.Violations, r.First, r.Refreshing, nil
}
