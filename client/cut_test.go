package client_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/anteroom/anteroom/client"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
)

// cutter is a TCP proxy in front of a node that drops the connection of
// the first request whose first line has cutPath, once the node's answer
// has begun: the node did the work, the client never hears of it. The
// client must send one request a connection (no keep-alive) for the
// first line to be the request's.
type cutter struct {
	ln      net.Listener
	target  string
	cutPath string
	left    atomic.Int32 // cuts still to make
	cuts    atomic.Int32 // cuts made
	wg      sync.WaitGroup
}

func startCutter(t *testing.T, target, cutPath string, cuts int32) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, target: target, cutPath: cutPath}
	c.left.Store(cuts)
	c.wg.Add(1)
	go c.serve()
	t.Cleanup(func() { ln.Close(); c.wg.Wait() })
	return c
}

func (c *cutter) URL() string { return "http://" + c.ln.Addr().String() }

func (c *cutter) serve() {
	defer c.wg.Done()
	for {
		in, err := c.ln.Accept()
		if err != nil {
			return
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.relay(in)
		}()
	}
}

func (c *cutter) relay(in net.Conn) {
	defer in.Close()
	out, err := net.Dial("tcp", c.target)
	if err != nil {
		return
	}
	defer out.Close()
	buf := make([]byte, 64<<10)
	k, err := in.Read(buf)
	if err != nil {
		return
	}
	line, _, _ := bytes.Cut(buf[:k], []byte("\r\n"))
	cut := strings.Contains(string(line), " "+c.cutPath+" ") && c.left.Add(-1) >= 0
	if _, err := out.Write(buf[:k]); err != nil {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		_, _ = io.Copy(out, in) // ends when relay closes both
	}()
	if !cut {
		_, _ = io.Copy(in, out)
		return
	}
	if _, err := out.Read(buf); err == nil { // the answer began: the node acted
		c.cuts.Add(1)
	}
}

// TestClaimAfterCutConnection drops the connection of the first claim
// after the node made the claim: the client sends it again with the same
// Idempotency-Key and gets the same claim back. The shopper may hold two
// units, so a retry under a new key would make a second claim.
func TestClaimAfterCutConnection(t *testing.T) {
	n := startNode(t, nodetest.HeaderMode(node.Config{}))
	nodetest.CreateSale(t, n, "cut", openSale(5, 2, 100))
	ctx := ctxFor(t)
	target := strings.TrimPrefix(n.URL(), "http://")
	proxy := startCutter(t, target, "/events/cut/claim", 1)
	oneShot := &http.Transport{DisableKeepAlives: true}
	c, err := client.New(proxy.URL(), client.WithUser("", "alice"), client.WithTransport(oneShot))
	if err != nil {
		t.Fatal(err)
	}
	token := admitted(t, ctx, c, "cut")
	cl, err := c.Claim(ctx, "cut", token, "")
	if err != nil {
		t.Fatalf("claim through a cut connection: %v", err)
	}
	if proxy.cuts.Load() != 1 {
		t.Fatalf("the proxy cut %d claims, want 1", proxy.cuts.Load())
	}
	if cl.ID == "" || cl.Created {
		t.Errorf("claim after the cut: %+v, want the replay (200) of the claim the cut answer made", cl)
	}
	direct := newClient(t, n, "alice", http.DefaultTransport)
	mine, err := direct.Claims(ctx, "cut")
	if err != nil || len(mine) != 1 || mine[0].ID != cl.ID {
		t.Fatalf("claims after a cut and a retry: %+v %v, want exactly %s", mine, err, cl.ID)
	}
}

// TestFirstAnonymousJoinNotRetried drops the connection of an anonymous
// caller's first join: its retry would be a new visitor with a second
// place, so the client returns the error after one sending. A caller the
// node knows (header mode) gets the join retried and its one ticket.
func TestFirstAnonymousJoinNotRetried(t *testing.T) {
	for _, user := range []string{"", "bob"} {
		cfg := node.Config{}
		if user != "" {
			cfg = nodetest.HeaderMode(cfg)
		}
		n := startNode(t, cfg)
		nodetest.CreateSale(t, n, "j", openSale(5, 1, 100))
		ctx := ctxFor(t)
		proxy := startCutter(t, strings.TrimPrefix(n.URL(), "http://"), "/events/j/join", 1)
		rec := newRecorder(t)
		rec.base = &http.Transport{DisableKeepAlives: true}
		opts := []client.Option{client.WithTransport(rec)}
		if user != "" {
			opts = append(opts, client.WithUser("", user))
		}
		c, err := client.New(proxy.URL(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		tk, err := c.Join(ctx, "j")
		sent := len(rec.of("/events/j/join"))
		switch {
		case proxy.cuts.Load() != 1:
			t.Fatalf("user %q: the proxy cut %d joins, want 1", user, proxy.cuts.Load())
		case user == "" && (err == nil || sent != 1):
			t.Errorf("anonymous first join through a cut: %+v %v after %d sendings, want the error after 1", tk, err, sent)
		case user != "" && (err != nil || sent != 2 || tk.Ticket == ""):
			t.Errorf("named join through a cut: %+v %v after %d sendings, want the ticket after 2", tk, err, sent)
		}
		var e *client.Error
		if errors.As(err, &e) {
			t.Errorf("a cut answer is an *Error: %v", e)
		}
	}
}
