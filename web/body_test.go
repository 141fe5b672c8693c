package web

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/staffapi"
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

// failingExport is a list store whose export fails after some lines.
type failingExport struct {
	staffapi.ListStore
	lines int
}

func (f failingExport) Get(_ context.Context, name string) (lists.Meta, error) {
	return lists.Meta{Name: name, Kind: lists.KindUser, Count: int64(f.lines) * 2}, nil
}

func (f failingExport) Export(_ context.Context, _ string, w io.Writer) error {
	for i := range f.lines {
		if _, err := fmt.Fprintf(w, "%016x\n", i); err != nil {
			return err
		}
	}
	return errors.New("redis went away")
}

// TestExportCutShort: an export that fails midway is a truncated answer
// (the connection cut before the chunked body's end), never a short one
// that reads as whole.
func TestExportCutShort(t *testing.T) {
	app := limApp(t, Config{AdminToken: "admin-token-0123456789"}, limSale(event.Limits{}), Deps{Lists: failingExport{lines: 50000}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/admin/lists/l1/entries", nil)
	req.Header.Set("Authorization", "Bearer admin-token-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 || err == nil {
		t.Fatalf("a failed export: %d, %d bytes read, error %v; want 200 and a read error (truncated)", resp.StatusCode, n, err)
	}
	if n != 50000*17 {
		t.Errorf("%d bytes before the cut, want the %d written", n, 50000*17)
	}
}
