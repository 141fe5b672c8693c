package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

const (
	joinEnabled  = `!document.getElementById("join").disabled`
	claimVisible = `(() => { const b = document.getElementById("claim"); return !b.hidden && !b.disabled; })()`
)

// countdownSeconds reads the big countdown (hh:mm:ss) as seconds.
func countdownSeconds(t *testing.T, s string) int {
	t.Helper()
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 3 {
		t.Fatalf("countdown %q: want hh:mm:ss", s)
	}
	total := 0
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("countdown %q: %v", s, err)
		}
		total = total*60 + n
	}
	return total
}

// TestShopperJourney follows one shopper on a phone whose clock is seven
// minutes slow: the countdown (from server time), the join button
// unlocking, the shuffle window, admission, the claim and its status, and
// the revealed seed in the fairness panel. The node runs the order worker,
// so the claim goes from pending to confirmed.
func TestShopperJourney(t *testing.T) {
	n := startNode(t)
	if err := n.StartWorker(context.Background()); err != nil {
		t.Fatalf("order worker: %v", err)
	}
	browser := startBrowser(t)
	// The page must load and show the countdown before the queue opens,
	// and the join must land in the 2 s window after the start: both
	// leads are measured on this machine, not fixed.
	pace := setupPace(t, n, browser, sale{supply: 5, opensIn: -2 * time.Second, startsIn: time.Hour, window: 2, rate: 50}, nil)
	opensIn := nodetest.Lead(pace, 4*time.Second)
	startsIn := opensIn + nodetest.Lead(pace, 2*time.Second)
	nodetest.CreateSale(t, n, "drop", sale{supply: 5, opensIn: opensIn, startsIn: startsIn, window: 2, rate: 50})

	p := newTab(t, browser, "room", phoneW, phoneH, nil)
	p.skewClock(-7 * time.Minute)
	p.do(chromedp.Navigate(n.URL() + "/e/drop"))
	p.waitJS("the countdown", `document.getElementById("cd").textContent.includes(":")`, 0)
	w := p.weight()
	t.Logf("page weight of /e/drop: %d bytes transferred (document %d, assets %d in %d requests; API calls so far %d)",
		w.Document+w.Assets, w.Document, w.Assets, w.Requests, w.API)
	if w.Document+w.Assets > 50*1024 {
		t.Errorf("the page transferred %d bytes, want under 50 KB", w.Document+w.Assets)
	}
	if got := p.text("cdLabel"); got != "Queue opens in" {
		t.Errorf("countdown label %q, want %q", got, "Queue opens in")
	}
	if secs, most := countdownSeconds(t, p.text("cd")), int((opensIn+6*time.Second)/time.Second); secs > most {
		t.Errorf("countdown shows %d s with the device clock 7 min slow, want at most %d (from server time)", secs, most)
	}
	if eval[bool](p, joinEnabled) {
		t.Errorf("join button enabled before the queue opens")
	}
	p.shot("countdown")

	p.waitJS("the join button to unlock", joinEnabled, opensIn)
	p.do(chromedp.Click(chromedp.ID("join")))
	p.waitJS("the queue card", `!document.getElementById("queue").hidden`, 10*time.Second)
	if got := p.text("state"); got != "You're in the shuffle window" {
		t.Errorf("state after joining in the window: %q", got)
	}
	p.shot("shuffle-window")

	p.waitJS("admission", claimVisible, startsIn-opensIn+2*time.Second)
	t.Logf("time to first position: %.0f ms from clicking join (includes waiting for the 2 s shuffle window to close)",
		eval[float64](p, `window.anteroom.firstPosition - window.anteroom.joinClick`))
	if got := p.text("pos"); got != "1" {
		t.Errorf("position %q, want 1", got)
	}
	p.shot("admitted")

	p.do(chromedp.Click(chromedp.ID("claim")))
	p.waitJS("the granted result", resultKind+` === "granted"`, 15*time.Second)
	t.Logf("claim answered: %q", p.text("result"))
	p.shot("granted")
	p.waitJS("the confirmed order", `document.getElementById("result").textContent.includes("Status: confirmed.")`, 20*time.Second)
	claimID := eval[string](p, `JSON.parse(localStorage.getItem("anteroom_res_drop")).id`)
	if result := p.text("result"); !strings.Contains(result, "Claim "+claimID) {
		t.Errorf("granted result %q, want the claim id %s", result, claimID)
	}
	look := nodetest.Call(t, http.MethodGet, n.URL()+"/events/drop/claims/"+claimID, map[string]string{"Authorization": "Bearer " + n.AdminToken}, nil)
	if look.Status != http.StatusOK || nodetest.Str(look.Body, "status") != "confirmed" {
		t.Errorf("the server's view of claim %s: %d %s, want confirmed", claimID, look.Status, look.Raw)
	}
	p.waitJS("the revealed seed", `!document.getElementById("reveal").hidden && document.getElementById("hash").textContent.startsWith("✓")`, 10*time.Second)
	seed, commit := p.text("seed"), p.text("commit")
	sum := sha256.Sum256(mustHex(t, seed))
	if hex.EncodeToString(sum[:]) != commit {
		t.Errorf("revealed seed %s does not hash to the commitment %s", seed, commit)
	}
	if got, want := p.text("cmd"), "anteroom verify --seed "+seed+" --window 1 --seq 1"; got != want {
		t.Errorf("verify command %q, want %q", got, want)
	}
	p.shot("confirmed")
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("seed %q: %v", s, err)
	}
	return b
}

// TestSoldOut: a shopper admitted to a sale whose last unit goes to someone
// else first is told it is sold out; a newcomer sees it before joining.
func TestSoldOut(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "last", sale{supply: 1, opensIn: -2 * time.Second, startsIn: -time.Second, rate: 100})

	p := newTab(t, browser, "room", phoneW, phoneH, nil)
	p.do(chromedp.Navigate(n.URL() + "/e/last"))
	p.waitJS("the join button", joinEnabled, 10*time.Second)
	p.do(chromedp.Click(chromedp.ID("join")))
	p.waitJS("admission", claimVisible, 15*time.Second)
	t.Logf("time to first position: %.0f ms from clicking join to the position shown (no shuffle window)",
		eval[float64](p, `window.anteroom.firstPosition - window.anteroom.joinClick`))

	token, alice := nodetest.Admit(t, n, "last", nil)
	alice["Authorization"] = "Bearer " + token
	a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/last/claim", alice, nil)
	if a.Status != http.StatusCreated {
		t.Fatalf("alice's claim: %d %s", a.Status, a.Raw)
	}
	eval[bool](p, `(document.getElementById("claim").click(), true)`)
	p.waitJS("the sold-out result", resultKind+` === "sold_out"`, 15*time.Second)
	if got := p.text("result"); !strings.HasPrefix(got, "Sold out.") {
		t.Errorf("result %q, want the sold-out message", got)
	}
	if p.visible("claim") {
		t.Errorf("claim button still shown after sold out")
	}
	p.shot("sold-out")

	late := newTab(t, browser, "newcomer", phoneW, phoneH, nil)
	late.do(chromedp.Navigate(n.URL() + "/e/last"))
	late.waitJS("the sold-out result", resultKind+` === "sold_out"`, 10*time.Second)
	if eval[bool](late, joinEnabled) {
		t.Errorf("join button enabled on a sold-out sale")
	}
	late.shot("sold-out-newcomer")
}

// TestLotteryNotSelected: two shoppers register for a one-unit lottery;
// the one drawn first claims it, the other is told "not selected".
func TestLotteryNotSelected(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	// Both shoppers must open the room and register, each solving the
	// lottery's proof of work, before registration closes at the start:
	// the start is scheduled from that setup measured on this machine.
	probe := sale{supply: 1, mode: "lottery", opensIn: -2 * time.Second, startsIn: time.Hour, rate: 50}
	startsIn := nodetest.Lead(2*setupPace(t, n, browser, probe, nil), 6*time.Second)
	nodetest.CreateSale(t, n, "draw", sale{supply: 1, mode: "lottery", opensIn: -2 * time.Second, startsIn: startsIn, rate: 50})

	tabs := []*tab{newTab(t, browser, "shopper-a", phoneW, phoneH, nil), newTab(t, browser, "shopper-b", phoneW, phoneH, nil)}
	for _, p := range tabs {
		p.do(chromedp.Navigate(n.URL() + "/e/draw"))
		p.waitJS("the register button", joinEnabled, 0)
		if got := p.text("join"); got != "Register for the draw" {
			t.Errorf("join button %q, want the lottery wording", got)
		}
		p.do(chromedp.Click(chromedp.ID("join")))
		p.waitJS("registration", `document.getElementById("state").textContent === "You're registered for the draw"`, 0)
	}
	tabs[0].shot("registered")

	var winner, loser *tab
	nodetest.WaitFor(t, "the draw to admit someone", startsIn, func() bool {
		for i, p := range tabs {
			if eval[bool](p, claimVisible) {
				winner, loser = p, tabs[1-i]
				return true
			}
		}
		return false
	})
	winner.do(chromedp.Click(chromedp.ID("claim")))
	winner.waitJS("the granted result", resultKind+` === "granted"`, 10*time.Second)
	winner.shot("winner")
	loser.waitJS("the not-selected result", resultKind+` === "not_selected"`, 20*time.Second)
	if got := loser.text("result"); !strings.HasPrefix(got, "Not selected.") {
		t.Errorf("loser's result %q", got)
	}
	loser.waitJS("the revealed seed", `!document.getElementById("reveal").hidden`, 10*time.Second)
	if got := loser.text("w"); got != "2" {
		t.Errorf("window size shown %q, want 2", got)
	}
	loser.shot("not-selected")
}

// TestChinesePage: a browser asking for zh-CN gets the Chinese page, and
// the switcher turns it into English without a reload (and keeps the
// choice in a cookie). The sale asks for a
// proof of work on join, which the page solves by itself.
func TestChinesePage(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "cn", sale{supply: 10, opensIn: -2 * time.Second, startsIn: -time.Second, rate: 100, name: "限量球鞋首发", pow: 12})

	p := newTab(t, browser, "room-zh", phoneW, phoneH, map[string]any{"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.5"})
	p.do(chromedp.Navigate(n.URL() + "/e/cn"))
	p.waitJS("the join button", joinEnabled, 10*time.Second)
	if got := eval[string](p, `document.documentElement.lang`); got != "zh-Hans" {
		t.Errorf("html lang %q, want zh-Hans", got)
	}
	if got := p.text("join"); got != "加入排队" {
		t.Errorf("join button %q, want 加入排队", got)
	}
	p.shot("zh-open")
	p.do(chromedp.Click(chromedp.ID("join")))
	p.waitJS("admission", claimVisible, 20*time.Second)
	t.Logf("time to first position with a 12-bit proof of work: %.0f ms", eval[float64](p, `window.anteroom.firstPosition - window.anteroom.joinClick`))
	if !eval[bool](p, `performance.getEntriesByType("resource").some((r) => r.name.endsWith("/assets/pow.js"))`) {
		t.Errorf("the page joined a proof-of-work sale without loading the solver")
	}
	if got, want := p.text("state")+"|"+p.text("claim"), "轮到你了|立即领取"; got != want {
		t.Errorf("admitted texts %q, want %q", got, want)
	}
	p.shot("zh-admitted")
	choose(p, "lang", "en")
	p.waitJS("the English texts", `document.getElementById("claim").textContent === "Claim now"`, 10*time.Second)
	if got, want := p.text("state")+"|"+p.text("claim")+"|"+eval[string](p, `document.documentElement.lang`), "It's your turn|Claim now|en"; got != want {
		t.Errorf("after the switch %q, want %q", got, want)
	}
	// The accessible names follow the switch too.
	if got := eval[string](p, `document.getElementById("bar").getAttribute("aria-label") + "|" + document.getElementById("lang").getAttribute("aria-label")`); got != "Progress in the queue|Language" {
		t.Errorf("accessible names after the switch %q, want the English ones", got)
	}
	if !strings.Contains(eval[string](p, `document.cookie`), "anteroom_lang=en") {
		t.Errorf("the switcher did not keep its choice in the anteroom_lang cookie")
	}
	p.shot("switched-to-en")
}
