package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/push"
)

// backgroundable makes the tab's visibility the test's to set
// (window.__hidden, before any page script: document.hidden and
// visibilityState follow it) and records every Notification the page
// makes in window.__notes, after the browser made it.
const backgroundable = `(() => {
	window.__hidden = false;
	Object.defineProperty(document, "hidden", {configurable: true, get: () => window.__hidden});
	Object.defineProperty(document, "visibilityState", {configurable: true, get: () => window.__hidden ? "hidden" : "visible"});
	window.__notes = [];
	const N = window.Notification;
	if (!N) return;
	class Recorded extends N {
		constructor(title, opt) {
			super(title, opt);
			window.__notes.push({title: title, body: (opt || {}).body || "", tag: (opt || {}).tag || ""});
		}
	}
	Object.defineProperty(Recorded, "permission", {get: () => N.permission});
	Recorded.requestPermission = (...a) => N.requestPermission(...a);
	window.Notification = Recorded;
})();`

// hide sends the tab to the background as far as the page can tell.
const hide = `(() => { window.__hidden = true; document.dispatchEvent(new Event("visibilitychange")); return true; })()`

// pressed is whether the toggle button with id is on.
func pressed(id string) string {
	return fmt.Sprintf(`document.getElementById(%q).getAttribute("aria-pressed") === "true"`, id)
}

// TestYourTurnInTheBackground: two shoppers wait in Chromium and both opt
// in on the page to a notification (the permission granted to the site)
// and a sound. One sends the tab to the background; when the frontier
// reaches them the tab's title and icon change, the sound plays, and a
// notification is shown, naming their turn and the time to claim by; the
// page shows how long the turn is held. The other, whose tab stays in
// front, gets the title and icon but no notification. With Web Push on,
// the opt-in registers the service worker with the scope /e/. axe-core
// checks the waiting page with the choices and the admitted page.
func TestYourTurnInTheBackground(t *testing.T) {
	// Web Push on: the page registers the service worker on the opt-in
	// (headless Chromium reaches no push service, so its subscription
	// fails there and the page's own notice remains).
	keyFile := filepath.Join(t.TempDir(), "vapid.key")
	key, err := push.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, func(c node.Config) node.Config {
		c.PushVAPIDKey, c.PushSubject, c.PushHosts = keyFile, "mailto:ops@shop.example", []string{"127.0.0.1"}
		return c
	})
	b := startBrowser(t)
	axeSource(t)
	nodetest.CreateSale(t, n, "turn", sale{supply: 5, name: "Night drop", opensIn: -3 * time.Second, startsIn: -2 * time.Second, rate: 0.5})
	for range 3 { // people ahead: the shoppers wait a few seconds
		if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/turn/join", nil, nil); a.Status != http.StatusOK {
			t.Fatalf("join ahead: %d %s", a.Status, a.Raw)
		}
	}
	msgs := catalog(t, "en")
	open := func(name string) *tab {
		p := newTab(t, b, name, phoneW, phoneH, nil)
		if _, err := chromedp.Call(p.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: backgroundable}); err != nil {
			t.Fatalf("init script: %v", err)
		}
		if _, err := chromedp.Call(p.ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted,
			Origin: n.URL(), BrowserContextID: chromedp.FromContext(p.ctx).BrowserContextID,
		}); err != nil {
			t.Fatalf("grant notifications: %v", err)
		}
		p.do(chromedp.Navigate(n.URL() + "/e/turn"))
		p.waitJS("the join button", joinEnabled, 0)
		p.do(chromedp.Click(chromedp.ID("join")))
		p.waitJS("the call-back choices", `!document.getElementById("callback").hidden`, 10*time.Second)
		p.do(chromedp.Click(chromedp.ID("notifyBtn")))
		p.waitJS("notifications on", pressed("notifyBtn"), 0)
		p.waitJS("the service worker, scope /e/", `navigator.serviceWorker.getRegistration("/e/turn").then((r) => !!r && r.scope === location.origin + "/e/")`, 0)
		p.do(chromedp.Click(chromedp.ID("soundBtn")))
		p.waitJS("the sound on, with a sample", pressed("soundBtn")+` && anteroom.beeps === 1`, 0)
		return p
	}
	// Staff pause the sale while both tabs open and the first goes to the
	// background: people queue, nobody is admitted. Without the pause a
	// stressed CI run admitted the first tab while still in front (hidden
	// only after the second tab opened and an axe run), so no
	// notification was due ('notifications: [], want one').
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/turn/pause", admin, nil); a.Status != http.StatusOK {
		t.Fatalf("pause: %d %s", a.Status, a.Raw)
	}
	away := open("background")
	eval[bool](away, hide)
	front := open("front")
	away.axe("waiting, with the call-back choices on")
	away.shot("waiting-callback")
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/turn/resume", admin, nil); a.Status != http.StatusOK {
		t.Fatalf("resume: %d %s", a.Status, a.Raw)
	}

	for _, p := range []*tab{away, front} {
		p.waitJS("admission", claimVisible, 60*time.Second)
		wantTitle := "✓ " + msgs["turnTitle"] + " — Night drop"
		if got := eval[string](p, `document.title`); got != wantTitle {
			t.Errorf("tab %s: title %q on admission, want %q", p.name, got, wantTitle)
		}
		if icon := eval[string](p, `document.querySelector('link[rel~="icon"]').getAttribute("href")`); !strings.HasPrefix(icon, "data:image/svg+xml,") {
			t.Errorf("tab %s: favicon %q on admission, want the turn's icon", p.name, icon)
		}
		if beeps := eval[float64](p, `anteroom.beeps`); beeps != 2 {
			t.Errorf("tab %s: the sound played %v times (with the sample), want 2", p.name, beeps)
		}
		held := strings.SplitN(msgs["held"], "{r}", 2)[0]
		if note := p.text("qNote"); !strings.Contains(note, held) || !strings.Contains(note, ":0") {
			t.Errorf("tab %s: note %q on admission, want the time the turn is held (%q…)", p.name, note, held)
		}
		if eval[bool](p, `!document.getElementById("callback").hidden`) {
			t.Errorf("tab %s: the call-back choices still show once admitted", p.name)
		}
	}
	type note struct{ Title, Body, Tag string }
	notes := eval[[]note](away, `__notes`)
	if len(notes) != 1 || notes[0].Title != eval[string](away, `document.title`) || notes[0].Tag != "anteroom-turn-turn" ||
		!strings.HasPrefix(notes[0].Body, strings.SplitN(msgs["turnBody"], "{t}", 2)[0]) {
		t.Errorf("background tab's notifications: %+v, want one naming the turn, tagged anteroom-turn-turn", notes)
	}
	if notes := eval[[]note](front, `__notes`); len(notes) != 0 {
		t.Errorf("the tab in front showed notifications %+v, want none (its title and icon say it)", notes)
	}
	away.axe("admitted, in the background")
	away.shot("admitted-background")
}
