package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/wait"
	"github.com/anteroom/anteroom/web/staffapi"
)

// TestDemoCommand runs the README's first command as written,
// `go run ./cmd/anteroom demo` from the repository's root, with nothing
// else installed or configured: the sale on embedded Redis and NATS must
// end with a balanced reconciliation (exit status 0) and nothing oversold.
func TestDemoCommand(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to run the demo as the README does: %v", err)
	}
	cmd := exec.Command(goTool, "run", "./cmd/anteroom", "demo")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./cmd/anteroom demo: %v\n%s", err, out)
	}
	for _, want := range []string{
		`(?m)^\s+oversold\s+0$`,
		`(?m)^\s+users above their limit\s+0$`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("the demo's report has no line %s:\n%s", want, out)
		}
	}
}

// syncBuffer is an io.Writer the demo prints to while a test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// linkLine is the demo's printed sign-in link.
var linkLine = regexp.MustCompile(`sign in as "demo" .*: (http://127\.0\.0\.1:\d+/admin/session/link\?\S+)`)

// TestDemoConsoleLink runs the demo with -keep as the README says: it
// prints a one-time sign-in link that, from this machine, signs the
// demo's admin account in (the console's session cookie) and opens the
// console on the demo's sale; the same link again is refused with no
// cookie. After the report it prints a fresh one, and stops when
// interrupted.
func TestDemoConsoleLink(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- demo(ctx, []string{"-keep", "-addr", "127.0.0.1:0", "-users", "300", "-units", "30"}, func(string) string { return "" }, out, io.Discard)
	}()
	var link string
	if err := wait.Until(time.Minute, 20*time.Millisecond, func() error {
		if m := linkLine.FindStringSubmatch(out.String()); m != nil {
			link = m[1]
			return nil
		}
		select {
		case err := <-done:
			return wait.Stop(fmt.Errorf("the demo ended: %v\n%s", err, out.String()))
		default:
		}
		return errors.New("no sign-in link printed")
	}); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	ev := u.Query().Get("event")
	if !strings.HasPrefix(ev, "demo-") || !strings.Contains(out.String(), "staff console: "+u.Scheme+"://"+u.Host+"/admin/?event="+ev) {
		t.Fatalf("the link %s names sale %q; the demo printed:\n%s", link, ev, out.String())
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin/?event="+ev {
		t.Fatalf("following the link: %d to %q, want 303 to the console on %s", resp.StatusCode, resp.Header.Get("Location"), ev)
	}
	var session string
	for _, c := range resp.Cookies() {
		if c.Name == staffapi.ConsoleCookie {
			session = c.Name + "=" + c.Value
		}
	}
	req, _ := http.NewRequest(http.MethodGet, u.Scheme+"://"+u.Host+"/admin/events/"+ev, nil)
	req.Header.Set("Cookie", session)
	got, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got.Body.Close()
	if got.StatusCode != http.StatusOK {
		t.Fatalf("the sale with the link's session (%q): %d, want 200", session, got.StatusCode)
	}
	again, err := noFollow.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	again.Body.Close()
	if again.StatusCode != http.StatusUnauthorized || again.Header.Get("Set-Cookie") != "" {
		t.Fatalf("the link again: %d, Set-Cookie %q; want 401 and none", again.StatusCode, again.Header.Get("Set-Cookie"))
	}
	if err := wait.Until(2*time.Minute, 50*time.Millisecond, func() error {
		if n := len(linkLine.FindAllString(out.String(), -1)); n < 2 {
			return fmt.Errorf("%d sign-in links printed, want a fresh one after the report", n)
		}
		return nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("the demo, interrupted: %v\n%s", err, out.String())
	}
}
