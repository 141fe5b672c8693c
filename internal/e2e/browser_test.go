package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Screen sizes: a phone for the waiting room, a laptop for the console.
const (
	phoneW, phoneH = 390, 844
	deskW, deskH   = 1280, 900
)

// startBrowser starts headless Chromium with a fresh profile and closes
// it on cleanup. It skips without Chromium, except under CI=true.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	chromium := testenv.Binary(t, "chromium")
	// Chromium's own temporary files (its singleton socket's directory,
	// which it leaves behind when it is killed) go in the test's
	// directory too, not in /tmp.
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(chromium), chromedp.UserDataDir(t.TempDir()), chromedp.Env("TMPDIR=" + t.TempDir())}
	for _, f := range []string{"headless", "no-sandbox", "disable-gpu", "disable-quic", "no-first-run",
		"disable-background-networking", "disable-component-update", "disable-sync", "disable-dev-shm-usage"} {
		opts = append(opts, chromedp.Flag(f, true))
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	return ctx
}

// tab is one page in its own browser context (its own cookies and
// localStorage: its own visitor).
type tab struct {
	t    *testing.T
	ctx  context.Context
	name string

	mu         sync.Mutex
	exceptions []string
}

// newTab opens an isolated tab of width×height; the test fails if the page
// throws an uncaught exception.
func newTab(t *testing.T, browser context.Context, name string, width, height int64, headers map[string]any) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	p := &tab{t: t, ctx: ctx, name: name}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height, chromedp.EmulateScale(1))); err != nil {
		t.Fatalf("open tab %s: %v", name, err)
	}
	if headers != nil {
		if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: headers}); err != nil {
			t.Fatalf("headers: %v", err)
		}
	}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() {
				p.mu.Lock()
				p.exceptions = append(p.exceptions, m.String())
				p.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, e := range p.exceptions {
			t.Errorf("tab %s: uncaught exception in the page: %s", name, e)
		}
	})
	return p
}

// skewClock makes the page's device clock run off by d, before any page
// loads: the page must count down from server time regardless.
func (p *tab) skewClock(d time.Duration) {
	p.t.Helper()
	src := fmt.Sprintf("(() => { const real = Date.now.bind(Date); Date.now = () => real() + %d; })();", d.Milliseconds())
	if _, err := chromedp.Call(p.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src}); err != nil {
		p.t.Fatalf("skew clock: %v", err)
	}
}

// do runs actions, failing the test when they do not finish within
// nodetest.Patience.
func (p *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, nodetest.Patience)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("tab %s: %v", p.name, err)
	}
}

// eval evaluates a JavaScript expression in the page (within
// nodetest.Patience).
func eval[T any](p *tab, expr string) T {
	p.t.Helper()
	v, err := tryEval[T](p, expr)
	if err != nil {
		p.t.Fatalf("tab %s: eval %s: %v", p.name, expr, err)
	}
	return v
}

// tryEval is eval that returns its error.
func tryEval[T any](p *tab, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(p.ctx, nodetest.Patience)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// text returns the text of the element with id, "" when absent.
func (p *tab) text(id string) string {
	p.t.Helper()
	return eval[string](p, fmt.Sprintf(`(document.getElementById(%q) || {}).textContent || ""`, id))
}

// visible reports whether the element with id is rendered.
func (p *tab) visible(id string) bool {
	p.t.Helper()
	return eval[bool](p, fmt.Sprintf(`(() => { const e = document.getElementById(%q); return !!e && e.offsetParent !== null; })()`, id))
}

// waitJS polls a boolean expression until it holds, and fails the test
// when it does not hold within d, the scenario's own time, plus
// nodetest.Patience for the machine (see nodetest.WaitFor): d is 0 for
// what the page does at once (loading, answering a click), the time until
// the sale's moment for what waits for one.
func (p *tab) waitJS(what, expr string, d time.Duration) {
	p.t.Helper()
	start := time.Now()
	deadline := start.Add(d + nodetest.Patience)
	for {
		// A page that navigates while it is asked (a redirect, a form
		// sent) answers with an error, not false: the wait asks again.
		ok, err := tryEval[bool](p, expr)
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			if err != nil {
				p.t.Fatalf("tab %s: timed out after %s waiting for %s: eval %s: %v", p.name, time.Since(start).Round(time.Millisecond), what, expr, err)
			}
			p.shot("timeout")
			dbg := eval[string](p, `(() => { try { return JSON.stringify({busy, due, st, res, notice, now: Date.now()}); } catch (e) { return ""; } })()`)
			p.t.Fatalf("tab %s: timed out after %s (the scenario's %s and %s of patience) waiting for %s; result %q, notice %q, state %q; page %s",
				p.name, time.Since(start).Round(time.Millisecond), d, nodetest.Patience, what, p.text("result"), p.text("notice"), p.text("state"), dbg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// resultKind is the data-kind of the page's result box, "" when hidden.
const resultKind = `(() => { const e = document.getElementById("result"); return e.hidden ? "" : e.dataset.kind; })()`

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// artifacts is where screenshots of t go.
func artifacts(t *testing.T) string {
	t.Helper()
	root := os.Getenv("ANTEROOM_ARTIFACTS")
	if root == "" {
		return t.TempDir()
	}
	dir := filepath.Join(root, unsafeName.ReplaceAllString(t.Name(), "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifacts: %v", err)
	}
	return dir
}

// shot saves a full-page PNG of the tab and logs its path.
func (p *tab) shot(state string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, nodetest.Patience)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Errorf("screenshot %s: %v", state, err)
		return
	}
	path := filepath.Join(artifacts(p.t), strings.ToLower(p.name+"-"+unsafeName.ReplaceAllString(state, "-"))+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Errorf("screenshot %s: %v", state, err)
		return
	}
	p.t.Logf("screenshot %s: %s", state, path)
}

// weight is what loading a page transferred, by the Resource Timing API.
type weight struct {
	Document int `json:"doc"`    // the HTML, headers included
	Assets   int `json:"assets"` // scripts, styles, images, fonts
	API      int `json:"api"`    // fetch() calls so far
	Requests int `json:"requests"`
}

func (p *tab) weight() weight {
	p.t.Helper()
	return eval[weight](p, `(() => {
		const nav = performance.getEntriesByType("navigation")[0], rs = performance.getEntriesByType("resource");
		const sum = (f) => rs.filter(f).reduce((a, r) => a + r.transferSize, 0);
		return {doc: nav.transferSize, assets: sum((r) => r.initiatorType !== "fetch" && r.initiatorType !== "xmlhttprequest"),
			api: sum((r) => r.initiatorType === "fetch"), requests: rs.length};
	})()`)
}
