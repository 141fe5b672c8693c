package e2e

import (
	"bytes"
	"context"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// screenshotPath is the README's picture of the waiting room.
var screenshotPath = filepath.Join("..", "..", "docs", "img", "waiting-room.png")

// updateDocs rewrites the docs' generated parts instead of checking them
// (internal/docs's TestEventFieldsTable reads the same variable).
const updateDocs = "ANTEROOM_UPDATE_DOCS"

// TestDocsScreenshot keeps docs/img/waiting-room.png, the README's
// picture of the waiting room: with ANTEROOM_UPDATE_DOCS=1 it takes it
// again (the built-in page, JavaScript on, a shopper waiting in the queue
// on a laptop-sized window) and writes it, re-encoded at the best PNG
// compression; otherwise it checks that the file is there, a PNG of that
// size and at most 100 KB.
func TestDocsScreenshot(t *testing.T) {
	const width, height, maxBytes = 1024, 768, 100 * 1024
	if os.Getenv(updateDocs) != "1" {
		b, err := os.ReadFile(screenshotPath)
		if err != nil {
			t.Fatalf("%v: take it with %s=1 go test ./internal/e2e -run TestDocsScreenshot", err, updateDocs)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(b))
		if err != nil || cfg.Width != width || len(b) > maxBytes {
			t.Errorf("%s: %d bytes, %v %+v; want a %d px wide PNG of at most %d bytes", screenshotPath, len(b), err, cfg, width, maxBytes)
		}
		return
	}
	n := startNode(t)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "spring", sale{supply: 500, name: "Spring sneaker drop", opensIn: -3 * time.Second, startsIn: -2 * time.Second, rate: 0.05})
	for range 8 { // people ahead (the per-IP join budget allows a few)
		if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/spring/join", nil, nil); a.Status != http.StatusOK {
			t.Fatalf("join ahead: %d %s", a.Status, a.Raw)
		}
	}
	p := newTab(t, browser, "docs", width, height, map[string]any{"Accept-Language": "en"})
	p.do(chromedp.Navigate(n.URL() + "/e/spring"))
	p.waitJS("the join button", joinEnabled, 0)
	p.do(chromedp.Click(chromedp.ID("join")))
	p.waitJS("a place and an ETA", `document.getElementById("pos").textContent === "9" && document.getElementById("eta").textContent !== "—"`, 10*time.Second)
	ctx, cancel := context.WithTimeout(p.ctx, nodetest.Patience)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&out, img); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(screenshotPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(screenshotPath, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d bytes (Chromium's PNG: %d)", screenshotPath, out.Len(), len(raw))
}
