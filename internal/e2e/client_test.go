package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// TestClientLibrary runs /assets/anteroom.js in Chromium against a real
// node: the module the node serves is the one built from the TypeScript
// package (web/pages/js/anteroom; internal/jsclient checks the committed
// build and runs its Node tests), with its declarations beside it; an
// unknown sale is refused with an AnteroomError carrying the problem's
// code; join, poll until admitted, then claim while the sale is paused —
// the claim backs off no sooner than Retry-After, keeps one Idempotency-Key
// across its retries and succeeds once staff resume; requests never
// overlap; the visitor's claims list it, and release gives it back.
func TestClientLibrary(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "lib", sale{supply: 5, name: "Library drop", opensIn: -3 * time.Second, startsIn: -2 * time.Second, rate: 50})
	app := newTab(t, browser, "app", deskW, deskH, nil)
	app.do(chromedp.Navigate(n.URL() + "/healthz"))
	state := eval[string](app, `(async () => {
  const {Anteroom, AnteroomError, backoffMs} = await import("/assets/anteroom.js");
  const src = await (await fetch("/assets/anteroom.js")).text();
  if (!src.startsWith("// Generated from web/pages/js/anteroom/src/anteroom.ts")) return "not the module built from the package";
  const types = await fetch("/assets/anteroom.d.ts");
  if (!types.ok || !(await types.text()).includes("export declare class Anteroom")) return "no declarations at /assets/anteroom.d.ts";
  try {
    await new Anteroom("no-such-sale").join();
    return "joined a sale that does not exist";
  } catch (e) {
    if (!(e instanceof AnteroomError) || e.status !== 404 || e.code !== "unknown_event") return "refusal: " + e;
  }
  const rec = window.rec = {calls: [], retries: [], inFlight: 0, most: 0};
  const counted = async (u, o) => {
    rec.calls.push({path: new URL(u, location.href).pathname, key: (o.headers || {})["Idempotency-Key"] || ""});
    rec.most = Math.max(rec.most, ++rec.inFlight);
    try { return await fetch(u, o); } finally { rec.inFlight--; }
  };
  const c = window.client = new Anteroom("lib", {fetch: counted, storage: localStorage, onRetry: (i) => rec.retries.push(i)});
  for (let s = 0; s < 20; s++) if (backoffMs(3, s) < 3000) return "backoff under Retry-After";
  await c.join();
  await Promise.all([c.status(), c.status(), c.status()]);
  const st = await c.waitForTurn();
  window.token = st.admission_token;
  return st.state;
})()`)
	if state != "admitted" {
		t.Fatalf("waitForTurn: %q", state)
	}
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/lib/pause", admin, nil); a.Status != http.StatusOK {
		t.Fatalf("pause: %d %s", a.Status, a.Raw)
	}
	_ = eval[int](app, `window.claimed = window.client.claim(window.token).then((r) => JSON.stringify(r)); 1`)
	app.waitJS("a claim retry", `window.rec.retries.length >= 1`, 15*time.Second)
	retry := eval[map[string]any](app, `window.rec.retries[0]`)
	ra, _ := retry["retryAfter"].(float64)
	wait, _ := retry["waitMs"].(float64)
	if retry["status"] != float64(503) || ra < 1 || wait < 1000*ra {
		t.Errorf("first claim retry %v: want a 503 waited no sooner than Retry-After", retry)
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/lib/resume", admin, nil); a.Status != http.StatusOK {
		t.Fatalf("resume: %d %s", a.Status, a.Raw)
	}
	res := eval[string](app, `window.claimed`)
	t.Logf("claim: %s", res)
	out := eval[map[string]any](app, `(async () => {
  const r = JSON.parse(await window.claimed);
  const keys = new Set(window.rec.calls.filter((c) => c.path.endsWith("/claim")).map((c) => c.key));
  const claims = window.rec.calls.filter((c) => c.path.endsWith("/claim")).length;
  const most = window.rec.most;
  const mine = await window.client.claims();
  const released = await window.client.release(r.body.claim_id);
  const after = await window.client.claims();
  return {status: r.status, keys: keys.size, claims, most, stored: localStorage.getItem("anteroom_claim_key_lib") === null,
    mine: mine.map((c) => c.claim_id === r.body.claim_id && c.status).join(), released: released.status, after: after.map((c) => c.status).join()};
})()`)
	if out["status"] != float64(201) {
		t.Errorf("claim answered %v, want 201", out["status"])
	}
	if claims, _ := out["claims"].(float64); out["keys"] != float64(1) || claims < 2 {
		t.Errorf("%v claim requests with %v Idempotency-Keys, want at least 2 with one key", out["claims"], out["keys"])
	}
	if out["most"] != float64(1) {
		t.Errorf("%v requests in flight at once, want 1", out["most"])
	}
	if out["stored"] != true {
		t.Errorf("the claim's key is still stored after its answer")
	}
	if out["mine"] != "pending" || out["released"] != "released" || out["after"] != "released" {
		t.Errorf("claims %v, release %v, claims after %v: want the claim pending, then released", out["mine"], out["released"], out["after"])
	}
	room := newTab(t, browser, "room", phoneW, phoneH, nil)
	room.do(chromedp.Navigate(n.URL() + "/e/lib"))
	room.waitJS("the page's retry rules from the library", `performance.getEntriesByType("resource").some((r) => r.name.endsWith("/assets/anteroom.js"))`, 10*time.Second)
}
