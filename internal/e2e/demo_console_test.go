package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/chromedp/chromedp"
)

// lockedBuffer is the demo's output, read while it writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestDemoConsoleLink runs `anteroom demo -keep` (built from the
// repository, a small crowd) and follows the sign-in link it prints in
// Chromium: the browser lands signed in as the demo's account on the
// console, with the demo's sale open; the link opened again in another
// browser signs nobody in.
func TestDemoConsoleLink(t *testing.T) {
	browser := startBrowser(t)
	bin := filepath.Join(t.TempDir(), "anteroom")
	build := exec.Command("go", "build", "-o", bin, "./cmd/anteroom")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/anteroom: %v\n%s", err, out)
	}
	out := &lockedBuffer{}
	demo := exec.Command(bin, "demo", "-keep", "-addr", "127.0.0.1:0", "-users", "200", "-units", "20")
	demo.Stdout, demo.Stderr = out, out
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- demo.Wait() }()
	t.Cleanup(func() {
		_ = demo.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = demo.Process.Kill()
			<-exited
		}
	})

	link := regexp.MustCompile(`sign in as "demo" .*: (http://127\.0\.0\.1:\d+/admin/session/link\?event=(demo-\d+)&token=\S+)`)
	var m []string
	if err := wait.Until(nodetest.Patience, 50*time.Millisecond, func() error {
		if m = link.FindStringSubmatch(out.String()); m != nil {
			return nil
		}
		select {
		case err := <-exited:
			return wait.Stop(fmt.Errorf("the demo ended: %v\n%s", err, out.String()))
		default:
		}
		return fmt.Errorf("no sign-in link in the demo's output:\n%s", out.String())
	}); err != nil {
		t.Fatal(err)
	}
	url, ev := m[1], m[2]

	staff := newTab(t, browser, "demo-console", deskW, deskH, nil)
	staff.do(chromedp.Navigate(url))
	staff.waitJS("the console signed in", `!document.getElementById("app").hidden && document.getElementById("signin").hidden`, 10*time.Second)
	staff.waitJS("the demo's sale open", fmt.Sprintf(`document.getElementById("f-id").value === %q`, ev), 10*time.Second)
	staff.waitJS("the sale in the list", fmt.Sprintf(`document.querySelector('button[data-id=%q]') !== null`, ev), 10*time.Second)
	if who := staff.text("who"); !strings.HasPrefix(who, "demo (admin)") {
		t.Errorf("signed in as %q, want demo (admin)", who)
	}
	if loc := eval[string](staff, `location.pathname + location.search`); loc != "/admin/?event="+ev {
		t.Errorf("the console at %q, want /admin/?event=%s (no token left in the address)", loc, ev)
	}
	staff.shot("signed-in-by-link")

	again := newTab(t, browser, "demo-link-again", deskW, deskH, nil)
	again.do(chromedp.Navigate(url))
	again.waitJS("the refusal", `document.body.innerText.includes("unauthenticated")`, 10*time.Second)
	again.do(chromedp.Navigate(strings.SplitN(url, "/admin/", 2)[0] + "/admin/"))
	again.waitJS("the sign-in form", `!document.getElementById("signin").hidden`, 10*time.Second)
}
