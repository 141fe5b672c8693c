package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// TestAxeRoomEveryStateAndLanguage: axe-core finds no WCAG 2.2 AA
// violation in the waiting room, in every state and every language, on a
// phone and on a laptop: the built-in page with anteroom's colours, then
// with an operator's branding (a dark background, a light primary).
func TestAxeRoomEveryStateAndLanguage(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	axeSource(t)
	nodetest.CreateSale(t, n, "a11y", sale{supply: 100, name: "Spring drop", opensIn: -time.Minute, startsIn: time.Hour, window: 60, rate: 10})
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	base := n.URL() + "/admin/events/a11y"

	checked := 0
	sweep := func(label string, widths [][2]int64) {
		for _, size := range widths {
			p := newTab(t, browser, fmt.Sprintf("%s-%d", label, size[0]), size[0], size[1], map[string]any{"Authorization": "Bearer " + n.AdminToken})
			for _, lang := range pageLangs {
				msgs := catalog(t, lang)
				for _, state := range pageStates {
					p.do(chromedp.Navigate(fmt.Sprintf("%s/preview?state=%s&lang=%s", base, state, lang)))
					id, want := stateText(msgs, state)
					p.waitJS(lang+" "+state, fmt.Sprintf(`document.getElementById(%q).textContent === %q`, id, want), 10*time.Second)
					p.axe(fmt.Sprintf("%s %s %s at %d px", label, lang, state, size[0]))
					checked++
				}
			}
		}
	}
	sweep("built-in", [][2]int64{{phoneW, phoneH}, {deskW, deskH}})

	draft := `{"name":"Night Owl","colors":{"primary":"#ffd166","background":"#14161a","text":"#f2f2f2"}}`
	if d := nodetest.Call(t, http.MethodPut, base+"/page", admin, []byte(draft)); d.Status != http.StatusOK {
		t.Fatalf("save the dark draft: %d %s", d.Status, d.Raw)
	}
	sweep("dark-brand", [][2]int64{{phoneW, phoneH}})
	t.Logf("axe-core checked %d page states × languages × widths", checked)
}
