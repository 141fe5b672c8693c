package web

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
)

// TestUnreadBodyNeverARequest: bodies are streamed (body.go), so a body
// its route never reads stays on the connection. Whatever answers without
// reading it — a list upload refused 401, a body over 16 KB refused 413
// — the connection is closed after the answer, and a request hidden in
// the body is never served; a body that is read keeps the connection for
// the next request.
func TestUnreadBodyNeverARequest(t *testing.T) {
	app := limApp(t, Config{AdminToken: "admin-token-0123456789"}, limSale(event.Limits{}), Deps{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	hidden := "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
	for _, c := range []struct {
		name, head string
		body       string
		status     int
		closed     bool
	}{
		{"an upload refused 401", "POST /admin/lists/l1/entries HTTP/1.1\r\nHost: a\r\n", hidden, 401, true},
		{"a body over 16 KB", "PUT /admin/events/ev HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer admin-token-0123456789\r\n",
			strings.Repeat(" ", BodyLimit) + hidden, 413, true},
		{"a body read", "POST /admin/session HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n", `{"name":"x","password":"y"}`, 503, false}, // no accounts on this app
	} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "%sContent-Length: %d\r\n\r\n%s", c.head, len(c.body), c.body)
		if !c.closed {
			fmt.Fprint(conn, hidden) // the next request on the connection
		}
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || resp.Close != c.closed {
			t.Errorf("%s: %d, closed %v; want %d, closed %v", c.name, resp.StatusCode, resp.Close, c.status, c.closed)
		}
		next, err := http.ReadResponse(br, nil)
		switch {
		case c.closed && err == nil:
			t.Errorf("%s: the body was served as a request: %d", c.name, next.StatusCode)
		case !c.closed && (err != nil || next.StatusCode != 200):
			t.Errorf("%s: the next request on the connection: %v", c.name, err)
		}
		conn.Close()
	}
}
