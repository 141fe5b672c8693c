package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/chromedp/chromedp"
)

// TestNginxWaitingRoom walks a shopper in Chromium through
// deploy/gateway/nginx.conf in a real nginx: the protected shop URL sends
// them to the waiting page, the page admits them and returns them to that
// URL, where the shop sees their user id. A waiting page asked to return
// to another site stays where it is.
func TestNginxWaitingRoom(t *testing.T) {
	site, err := os.ReadFile("../../deploy/gateway/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	n := startNode(t)
	var mu sync.Mutex
	var users []string
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		users = append(users, r.Header.Get("X-User-ID"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<!doctype html><title>shop</title><p id=shop>shop page</p>")
	}))
	t.Cleanup(shop.Close)
	conf := strings.Replace(string(site), "127.0.0.1:8080", strings.TrimPrefix(n.URL(), "http://"), 1)
	conf = strings.Replace(conf, "127.0.0.1:3000", strings.TrimPrefix(shop.URL, "http://"), 1)
	gw := testenv.StartNginx(t, conf)
	nodetest.CreateSale(t, n, "drop", sale{supply: 5, opensIn: -time.Second, rate: 1000})
	browser := startBrowser(t)

	p := newTab(t, browser, "gateway", phoneW, phoneH, map[string]any{"X-User-ID": "mallory"})
	p.do(chromedp.Navigate(gw.URL() + "/drop/item?size=42&colour=red"))
	p.waitJS("the waiting page", `location.pathname === "/e/drop"`, 10*time.Second)
	p.waitJS("the join button to unlock", joinEnabled, 10*time.Second)
	p.do(chromedp.Click(chromedp.ID("join")))
	p.waitJS("the return to the shop", `location.pathname + location.search === "/drop/item?size=42&colour=red" && !!document.getElementById("shop")`, 20*time.Second)
	mu.Lock()
	seen := append([]string(nil), users...)
	mu.Unlock()
	if len(seen) != 1 || seen[0] == "" || seen[0] == "mallory" {
		t.Fatalf("the shop saw X-User-ID %q, want one request naming the admitted visitor", seen)
	}

	// Admitted already, the page is asked to go elsewhere: it stays.
	for _, foreign := range []string{"https://evil.example/", "//evil.example/x", "/%09/evil.example"} {
		p.do(chromedp.Navigate(gw.URL() + "/e/drop?return=" + foreign))
		p.waitJS("the claim button", claimVisible, 10*time.Second)
		if got := eval[string](p, `location.host + location.pathname`); got != strings.TrimPrefix(gw.URL(), "http://")+"/e/drop" {
			t.Errorf("return=%s: the page went to %s", foreign, got)
		}
	}
}
