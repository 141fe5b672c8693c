package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// TestConsoleReportDoor: a lottery open only to the "registered" list,
// with two door rules; the gate lets a partner through twice (bypass) and
// sends a bot to the waiting page once (sink), and a visitor on no list
// is refused at the join. The report page's door section shows the
// joins refused, says the sale is a lottery among pre-registered users,
// and has a table of each rule's matches (a caption, column and row
// headers), passing axe-core's WCAG 2.2 AA checks on a laptop and on a
// phone without sideways scrolling.
func TestConsoleReportDoor(t *testing.T) {
	n := startNode(t)
	admin := bearerOf(n.AdminToken)
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/lists/registered", admin, []byte(`{"kind":"user"}`)); a.Status != http.StatusCreated {
		t.Fatalf("create the list: %d %s", a.Status, a.Raw)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(mustJSON(t, sale{supply: 5, mode: "lottery", name: "Members draw", opensIn: -3 * time.Second, startsIn: 30 * time.Minute, rate: 10})), &cfg); err != nil {
		t.Fatal(err)
	}
	header := func(name, then string) map[string]string {
		return map[string]string{"name": name, "when": `request.headers["x-door"] == "` + name + `"`, "then": then}
	}
	// No proof of work (an anonymous lottery asks for one by default): a
	// list created a moment ago may not be held by the node yet, and its
	// "no" is then the join script's, after the join's defences (door
	// package doc). Either way the join is refused not_eligible.
	cfg["limits"] = map[string]any{"pow": map[string]any{"enabled": false}}
	cfg["door"] = map[string]any{"eligible_lists": []string{"registered"}, "rules": []map[string]string{header("partner", "bypass"), header("bots", "sink")}}
	nodetest.CreateSale(t, n, "draw", cfg)
	base := n.URL() + "/events/draw"
	for _, c := range []struct {
		rule string
		want int
	}{{"partner", http.StatusNoContent}, {"partner", http.StatusNoContent}, {"bots", http.StatusUnauthorized}} {
		if g := nodetest.Call(t, http.MethodGet, base+"/gate", map[string]string{"X-Door": c.rule}, nil); g.Status != c.want {
			t.Fatalf("gate as %s: %d %s, want %d", c.rule, g.Status, g.Raw, c.want)
		}
	}
	if j := nodetest.Call(t, http.MethodPost, base+"/join", nil, nil); j.Status != http.StatusForbidden || nodetest.Str(j.Body, "code") != "not_eligible" {
		t.Fatalf("join of a visitor on no list: %d %s, want 403 not_eligible", j.Status, j.Raw)
	}

	browser := startBrowser(t)
	for _, size := range [][2]int64{{deskW, deskH}, {phoneW, phoneH}} {
		staff := newTab(t, browser, fmt.Sprintf("report-door-%d", size[0]), size[0], size[1], nil)
		staff.do(chromedp.Navigate(n.URL() + "/admin/"))
		staff.waitJS("the sign-in form", `!document.getElementById("signin").hidden`, 10*time.Second)
		staff.do(chromedp.SendKeys(chromedp.ID("token"), n.AdminToken), chromedp.Click(chromedp.CSS(`#signin button`)))
		staff.waitJS("the console", `!document.getElementById("app").hidden`, 10*time.Second)
		staff.do(chromedp.Navigate(n.URL() + "/admin/report?event=draw"))
		staff.waitJS("the door's rules", `document.querySelectorAll("#doorRules tr").length > 0`, 15*time.Second)
		rows := eval[[]string](staff, `[...document.querySelectorAll("#doorRules tr")].map((tr) => [...tr.cells].map((c) => c.tagName + ":" + c.textContent).join("|"))`)
		if want := []string{"TH:partner|TD:bypass|TD:2", "TH:bots|TD:sink|TD:1"}; !reflect.DeepEqual(rows, want) {
			t.Errorf("door rules %q, want %q", rows, want)
		}
		tiles := eval[[]string](staff, `[...document.querySelectorAll("#doorTiles .tile")].map((d) => d.querySelector(".l").textContent + "=" + d.querySelector(".v").textContent)`)
		if want := []string{"Blocked joins=0", "Not eligible=1", "Sunk joins=0"}; !reflect.DeepEqual(tiles, want) {
			t.Errorf("door tiles %q, want %q", tiles, want)
		}
		if lot := eval[string](staff, `(() => { const p = document.getElementById("doorLottery"); return p.hidden ? "" : p.textContent; })()`); !strings.Contains(lot, "lottery among pre-registered users") || !strings.Contains(lot, "registered") {
			t.Errorf("the lottery line %q", lot)
		}
		if cap := eval[string](staff, `document.querySelector("#doorBox caption").textContent`); !strings.Contains(cap, "each door rule") {
			t.Errorf("the door table's caption %q", cap)
		}
		if w := eval[int](staff, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
			t.Errorf("the report scrolls sideways at %d px by %d px", size[0], w)
		}
		staff.axe(fmt.Sprintf("the report's door section at %d px", size[0]))
		staff.shot("door")
	}
}
