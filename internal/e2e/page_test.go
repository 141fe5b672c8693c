package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// catalog reads one of the waiting room's message catalogs.
func catalog(t *testing.T, code string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "web", "pages", "i18n", code+".json"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

var (
	pageLangs = []string{"en", "zh", "es", "ja", "de", "hi", "ar"}
	// room_closed is a room staff closed (event.Closure) with the visitor
	// queued; closed is a sale that has ended.
	pageStates = []string{"prequeue", "waiting", "admitted", "sold_out", "not_selected", "paused", "closed", "room_closed"}
)

// stateText is the text a state shows, and where: the queue card's title
// while the visitor waits, the result box once the sale is over for them.
func stateText(msgs map[string]string, state string) (id, text string) {
	switch state {
	case "sold_out", "not_selected", "closed":
		return "result", msgs[state]
	case "room_closed":
		return "state", msgs["st_roomClosed"]
	}
	return "state", msgs["st_"+state]
}

// TestPageEveryStateAndLanguage: staff save a branded draft (a bad template
// is refused with its line), preview it in one phone-sized tab in every
// state and every language — each screenshot's texts from that language's
// catalog, Arabic laid out right to left — then publish it; the live page
// shows the branding only after the publish, and both steps are audited.
func TestPageEveryStateAndLanguage(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "brand", sale{supply: 100, name: "Spring drop", opensIn: -time.Minute, startsIn: time.Hour, window: 60, rate: 10})
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	base := n.URL() + "/admin/events/brand"

	bad := nodetest.Call(t, http.MethodPut, base+"/page", admin, []byte(`{"template":"<p>\n{{.Nope}}\n{{.Runtime}}"}`))
	if bad.Status != http.StatusBadRequest || nodetest.Str(bad.Body, "code") != "bad_template" || bad.Body["line"] != float64(2) {
		t.Fatalf("bad template: %d %s, want 400 bad_template at line 2", bad.Status, bad.Raw)
	}
	if a := nodetest.Call(t, http.MethodPut, base+"/page", admin, []byte(`{"colors":{"primary":"red"}}`)); a.Status != http.StatusBadRequest {
		t.Fatalf("colour red: %d %s, want 400", a.Status, a.Raw)
	}
	if a := nodetest.Call(t, http.MethodPut, base, admin, []byte(`{"page":{"name":"sneaked"}}`)); a.Status != http.StatusBadRequest {
		t.Fatalf("a page through PUT of the event: %d %s, want 400", a.Status, a.Raw)
	}
	if a := nodetest.Call(t, http.MethodGet, base+"/page", admin, nil); a.Status != http.StatusOK || a.Body["draft"] != nil || a.Body["published"] != nil {
		t.Fatalf("after refused saves: %d %s, want no draft and nothing published", a.Status, a.Raw)
	}
	draft := `{"name":"Kite & Co","logo_url":"data:image/png;base64,iVBORw0KGgo=","colors":{"primary":"#8a1538","background":"#fffaf3","text":"#222222"},
		"copy":{"de":{"join":"Jetzt anstellen"}}}`
	d := nodetest.Call(t, http.MethodPut, base+"/page", admin, []byte(draft))
	if d.Status != http.StatusOK || nodetest.Str(d.Body, "draft_sha256") == "" {
		t.Fatalf("save draft: %d %s", d.Status, d.Raw)
	}
	live := nodetest.Call(t, http.MethodGet, n.URL()+"/e/brand", nil, nil)
	if strings.Contains(string(live.Raw), "Kite &amp; Co") {
		t.Fatalf("the live page shows the draft before it is published")
	}

	p := newTab(t, browser, "preview", phoneW, phoneH, map[string]any{"Authorization": "Bearer " + n.AdminToken})
	for _, lang := range pageLangs {
		msgs := catalog(t, lang)
		for _, state := range pageStates {
			p.do(chromedp.Navigate(fmt.Sprintf("%s/preview?state=%s&lang=%s", base, state, lang)))
			id, want := stateText(msgs, state)
			p.waitJS(lang+" "+state, fmt.Sprintf(`document.getElementById(%q).textContent === %q`, id, want), 10*time.Second)
			if got := p.text("brand"); got != "Kite & Co" {
				t.Errorf("%s %s: brand %q, want the draft's", lang, state, got)
			}
			if got := p.text("phase"); got == "" || strings.Contains(got, "{") {
				t.Errorf("%s %s: phase text %q", lang, state, got)
			}
			p.shot(state + "-" + lang)
		}
		// The copy override replaces the catalog's join text, for German only.
		if lang == "de" || lang == "en" {
			p.do(chromedp.Navigate(fmt.Sprintf("%s/preview?state=prequeue&lang=%s", base, lang)))
			want := map[string]string{"de": "Jetzt anstellen", "en": msgs["join"]}[lang]
			if got := eval[string](p, `window.getComputedStyle(document.body).color + "|" + document.getElementById("name").textContent`); !strings.HasPrefix(got, "rgb(34, 34, 34)|") {
				t.Errorf("%s: text colour and name %q, want the draft's #222222", lang, got)
			}
			if got := eval[string](p, `JSON.parse(document.getElementById("ar-page").textContent).messages.join`); got != want {
				t.Errorf("%s join text %q, want %q", lang, got, want)
			}
		}
	}
	// Right to left: the page's direction, and the header's start (the
	// shop's name) on the right of its end (the switcher).
	p.do(chromedp.Navigate(base + "/preview?state=waiting&lang=ar"))
	p.waitJS("the Arabic page", `document.documentElement.dir === "rtl"`, 10*time.Second)
	if !eval[bool](p, `(() => { const b = document.querySelector(".brand").getBoundingClientRect(), s = document.getElementById("lang").getBoundingClientRect();
		return getComputedStyle(document.body).direction === "rtl" && b.left > s.right; })()`) {
		t.Errorf("the Arabic page is not laid out right to left")
	}
	for _, lang := range []string{"en", "ja"} {
		p.do(chromedp.Navigate(base + "/preview?state=waiting&lang=" + lang))
		p.waitJS("the "+lang+" page", `document.documentElement.dir === "ltr"`, 10*time.Second)
	}
	if w := eval[float64](p, `document.documentElement.scrollWidth`); w > phoneW {
		t.Errorf("the preview is %v px wide on a %d px phone", w, phoneW)
	}

	pub := nodetest.Call(t, http.MethodPost, base+"/page/publish", admin, []byte(`{"draft_sha256":"`+strings.Repeat("0", 64)+`"}`))
	if pub.Status != http.StatusConflict {
		t.Fatalf("publish of another draft: %d %s, want 409", pub.Status, pub.Raw)
	}
	pub = nodetest.Call(t, http.MethodPost, base+"/page/publish", admin, []byte(`{"draft_sha256":"`+nodetest.Str(d.Body, "draft_sha256")+`"}`))
	if pub.Status != http.StatusOK {
		t.Fatalf("publish: %d %s", pub.Status, pub.Raw)
	}
	room := newTab(t, browser, "room-de", phoneW, phoneH, map[string]any{"Accept-Language": "de-DE,de;q=0.9"})
	room.do(chromedp.Navigate(n.URL() + "/e/brand"))
	room.waitJS("the published page", `document.getElementById("join").textContent === "Jetzt anstellen"`, 10*time.Second)
	if got := room.text("brand"); got != "Kite & Co" {
		t.Errorf("live brand %q, want the published one", got)
	}
	room.shot("published-de")

	audit := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/audit?event=brand", admin, nil)
	actions := string(audit.Raw)
	for _, want := range []string{`"page.draft"`, `"page.publish"`} {
		if !strings.Contains(actions, want) {
			t.Errorf("audit lacks %s: %.300s", want, actions)
		}
	}
}

// TestPageTemplateAndConsole: an operator's own template, saved and
// previewed from the console on a phone, publishes to a live page whose
// runtime still fills in the documented elements; the template cannot
// run a script of its own.
func TestPageTemplateAndConsole(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "tpl", sale{supply: 20, name: `Drop <img src=x onerror=alert(1)>`, opensIn: -time.Minute, startsIn: time.Hour, rate: 10})

	staff := newTab(t, browser, "console-phone", phoneW, phoneH, nil)
	staff.do(chromedp.Navigate(n.URL() + "/admin/"))
	staff.waitJS("the sign-in form", `!document.getElementById("signin").hidden`, 10*time.Second)
	staff.do(chromedp.SendKeys(chromedp.ID("token"), n.AdminToken), chromedp.Click(chromedp.CSS(`#signin button`)))
	staff.waitJS("the console", `!document.getElementById("app").hidden`, 10*time.Second)
	selectEvent(staff, "tpl")
	staff.waitJS("the page panel", `!document.getElementById("pageBox").hidden && document.getElementById("pv-state").options.length === `+strconv.Itoa(len(pageStates)), 10*time.Second)

	tpl := `<!doctype html><html lang="{{.Lang}}" dir="{{.Dir}}"><head><meta name="viewport" content="width=device-width"><style>body{font-family:sans-serif}.w{display:none}html[data-state=waiting] .w{display:block}</style></head>
<body><h1 id="name">{{.Event.Name}}</h1><p class="w">Hold tight: {{index .T "pos"}} <b id="pos">{{.Position}}</b></p>
<button id="join">{{index .T "join"}}</button><p id="state"></p>
{{.Runtime}}</body></html>`
	bad := strings.Replace(tpl, "{{.Runtime}}", "<script>alert(1)</script>{{.Runtime}}", 1)
	staff.do(chromedp.SetValue(chromedp.ID("pg-tpl"), bad), chromedp.Click(chromedp.ID("pgSave")))
	staff.waitJS("the refusal", `document.getElementById("pgAlert").textContent.includes("line 4")`, 10*time.Second)
	staff.shot("template-refused")

	staff.do(chromedp.SetValue(chromedp.ID("pg-tpl"), tpl), chromedp.Click(chromedp.ID("pgSave")))
	staff.waitJS("the saved draft", `document.getElementById("pgAlert").textContent.startsWith("Draft saved")`, 10*time.Second)
	choose(staff, "pv-lang", "ja")
	choose(staff, "pv-state", "waiting")
	staff.waitJS("the preview", `(() => { const d = document.getElementById("pv").contentDocument; return !!d && !!d.getElementById("state") && d.getElementById("state").textContent === "列に並んでいます"; })()`, 10*time.Second)
	if got := eval[string](staff, `document.getElementById("pv").contentDocument.querySelector(".w").textContent`); !strings.Contains(got, "4821") {
		t.Errorf("the template's waiting section %q, want the sample position 4821", got)
	}
	if w := eval[float64](staff, `document.documentElement.scrollWidth`); w > phoneW {
		t.Errorf("the console is %v px wide on a %d px phone: %s", w, phoneW, eval[string](staff, `Array.from(document.querySelectorAll("body *")).filter((e) => e.getBoundingClientRect().right > innerWidth).slice(0, 8).map((e) => e.tagName + "#" + e.id + "." + e.className + ":" + Math.round(e.getBoundingClientRect().right)).join(" ")`))
	}
	staff.shot("console-preview-phone")
	staff.do(chromedp.Click(chromedp.ID("pgPublish")))
	staff.waitJS("the publish", `document.getElementById("pgAlert").textContent.startsWith("Published")`, 10*time.Second)

	room := newTab(t, browser, "room-template", phoneW, phoneH, nil)
	room.do(chromedp.Navigate(n.URL() + "/e/tpl"))
	room.waitJS("the template's page", `document.getElementById("name").textContent.startsWith("Drop") && !document.getElementById("join").disabled`, 10*time.Second)
	if got := room.text("name"); got != `Drop <img src=x onerror=alert(1)>` {
		t.Errorf("the event name %q, want it shown as text", got)
	}
	if eval[int](room, `document.querySelectorAll("img").length`) != 0 {
		t.Errorf("the event name became markup")
	}
	room.shot("template-live")
}
