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

	"github.com/anteroom/anteroom/internal/node"
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
	n := startNode(t)
	gw, users := startGateway(t, n, "nginx.conf", "shop")
	nodetest.CreateSale(t, n, "drop", sale{supply: 5, opensIn: -time.Second, rate: 1000})
	browser := startBrowser(t)

	p := newTab(t, browser, "gateway", phoneW, phoneH, map[string]any{"X-User-ID": "mallory"})
	p.do(chromedp.Navigate(gw.URL() + "/drop/item?size=42&colour=red"))
	p.waitJS("the waiting page", `location.pathname === "/e/drop"`, 10*time.Second)
	p.waitJS("the join button to unlock", joinEnabled, 10*time.Second)
	p.do(chromedp.Click(chromedp.ID("join")))
	p.waitJS("the return to the shop", `location.pathname + location.search === "/drop/item?size=42&colour=red" && !!document.getElementById("shop")`, 20*time.Second)
	if seen := users(); len(seen) != 1 || seen[0] == "" || seen[0] == "mallory" {
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

// startGateway runs deploy/gateway/conf in a real nginx in front of node n
// and of a stub origin whose one page is <p id=name>. users returns the
// X-User-ID of every request the origin got, in order.
func startGateway(t *testing.T, n *node.Node, conf, name string) (gw *testenv.Nginx, users func() []string) {
	t.Helper()
	site, err := os.ReadFile("../../deploy/gateway/" + conf)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("X-User-ID"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<!doctype html><title>"+name+"</title><p id="+name+">"+name+" page</p>")
	}))
	t.Cleanup(origin.Close)
	c := strings.Replace(string(site), "127.0.0.1:8080", strings.TrimPrefix(n.URL(), "http://"), 1)
	c = strings.Replace(c, "127.0.0.1:3000", strings.TrimPrefix(origin.URL, "http://"), 1)
	return testenv.StartNginx(t, c), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}
