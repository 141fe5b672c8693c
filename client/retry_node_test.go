package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/client"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
)

// admin sends an admin call to n and fails t unless it answers 200.
func admin(t *testing.T, n *node.Node, path, body string) {
	t.Helper()
	var raw []byte
	if body != "" {
		raw = []byte(body)
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+path, map[string]string{"Authorization": "Bearer " + n.AdminToken}, raw); a.Status != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, a.Status, a.Raw)
	}
}

// newClient is a client of n for user (header mode) or anonymous ("")
// sending through rec.
func newClient(t *testing.T, n *node.Node, user string, rec http.RoundTripper, opts ...client.Option) *client.Client {
	t.Helper()
	opts = append([]client.Option{client.WithTransport(rec)}, opts...)
	if user != "" {
		opts = append(opts, client.WithUser("", user))
	}
	c, err := client.New(n.URL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// admitted joins ev as c and waits for the admission token.
func admitted(t *testing.T, ctx context.Context, c *client.Client, ev string) string {
	t.Helper()
	tk, err := c.Join(ctx, ev)
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	s, err := c.Wait(ctx, ev, tk.Ticket, nil)
	if err != nil || s.AdmissionToken == "" {
		t.Fatalf("wait: %+v %v, want an admission", s, err)
	}
	return s.AdmissionToken
}

// TestRateLimitedStatus makes the node refuse status polls (a ticket may
// poll once in two seconds) and checks the client waits the Retry-After
// before it polls again, and that a Retry-After longer than the client's
// MaxWait ends the call at once with the node's 429, not with a sooner
// retry.
func TestRateLimitedStatus(t *testing.T) {
	n := startNode(t, nodetest.HeaderMode(node.Config{}))
	sale := openSale(5, 1, 100)
	sale["limits"] = map[string]any{"status": map[string]any{"ticket": map[string]any{"per_second": 0.5, "burst": 1}}}
	nodetest.CreateSale(t, n, "slow", sale)
	ctx := ctxFor(t)
	rec := newRecorder(t)
	var sent []client.Sent // the observer runs on the calling goroutine
	c := newClient(t, n, "alice", rec, client.WithObserver(func(s client.Sent) { sent = append(sent, s) }))
	tk, err := c.Join(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the second is refused, then retried after Retry-After
		if _, err := c.Status(ctx, "slow", tk.Ticket); err != nil {
			t.Fatalf("status %d: %v", i, err)
		}
	}
	ex := rec.of("/events/slow/status")
	if len(ex) != 3 || ex[0].status != 200 || ex[1].status != http.StatusTooManyRequests || ex[1].retryAfter < time.Second || ex[2].status != 200 {
		t.Fatalf("status exchanges %v, want 200, 429 with Retry-After, 200", statuses(ex))
	}
	checkNeverSooner(t, ex)
	var seen []string
	for _, s := range sent {
		seen = append(seen, fmt.Sprintf("%s#%d:%d", s.Op, s.Attempt, s.Status))
		if s.Err != nil || s.Took <= 0 || (s.Status == 429) != (s.RetryAfter >= time.Second) {
			t.Errorf("observed %+v", s)
		}
	}
	if got := strings.Join(seen, " "); got != "join#1:200 status#1:200 status#1:429 status#2:200" {
		t.Errorf("the observer saw %s, want join#1:200 status#1:200 status#1:429 status#2:200", got)
	}

	// Asked to wait longer than it may: one sending, the 429 returned.
	impatient := newClient(t, n, "carol", rec, client.WithRetry(client.Retry{MaxWait: 500 * time.Millisecond}))
	if tk, err = impatient.Join(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	if _, err := impatient.Status(ctx, "slow", tk.Ticket); err != nil {
		t.Fatalf("first status: %v", err)
	}
	before := len(rec.of("/events/slow/status"))
	_, err = impatient.Status(ctx, "slow", tk.Ticket)
	var e *client.Error
	if !errors.Is(err, client.ErrRateLimited) || !errors.As(err, &e) || e.Status != 429 || e.RetryAfter < time.Second || e.Attempts != 1 {
		t.Fatalf("status past the budget with MaxWait 0.5s: %v (%+v), want the 429 after one sending", err, e)
	}
	if sent := len(rec.of("/events/slow/status")) - before; sent != 1 {
		t.Errorf("the refused status was sent %d times, want 1", sent)
	}
}

// TestPausedClaim pauses a sale under an admitted shopper's claim: the
// client sends the claim again after each 503's Retry-After, with the
// same Idempotency-Key, at most Attempts times; once the sale resumes, the
// same call with the same key makes exactly one claim.
func TestPausedClaim(t *testing.T) {
	n := startNode(t, nodetest.HeaderMode(node.Config{}))
	nodetest.CreateSale(t, n, "hold", openSale(5, 2, 100))
	ctx := ctxFor(t)
	rec := newRecorder(t)
	c := newClient(t, n, "alice", rec, client.WithRetry(client.Retry{Attempts: 3, MaxWait: 10 * time.Second}))
	token := admitted(t, ctx, c, "hold")
	admin(t, n, "/admin/events/hold/pause", "")

	_, err := c.Claim(ctx, "hold", token, "key-1")
	var e *client.Error
	if !errors.Is(err, client.ErrPaused) || !errors.As(err, &e) || e.Attempts != 3 || e.RetryAfter < time.Second {
		t.Fatalf("claim while paused: %v (%+v), want 503 paused after 3 attempts", err, e)
	}
	ex := rec.of("/events/hold/claim")
	if len(ex) != 3 {
		t.Fatalf("the claim was sent %d times, want Attempts = 3: %v", len(ex), statuses(ex))
	}
	checkNeverSooner(t, ex)

	// Resumed while the call waits: the retry makes the claim.
	patient := newClient(t, n, "alice", rec, client.WithRetry(client.Retry{Attempts: 20, MaxWait: 10 * time.Second}))
	done := make(chan error, 1)
	var cl client.Claim
	go func() {
		var err error
		cl, err = patient.Claim(ctx, "hold", token, "key-1")
		done <- err
	}()
	nodetest.WaitFor(t, "a second refused claim", 0, func() bool { return len(rec.of("/events/hold/claim")) >= 4 })
	admin(t, n, "/admin/events/hold/resume", "")
	if err := <-done; err != nil {
		t.Fatalf("claim across a resume: %v", err)
	}
	if cl.ID == "" || !cl.Created {
		t.Errorf("claim across a resume: %+v, want a new claim", cl)
	}
	ex = rec.of("/events/hold/claim")
	checkNeverSooner(t, ex[3:]) // the second call's sendings
	for _, x := range ex {
		if x.idemKey != "key-1" {
			t.Errorf("a claim was sent with Idempotency-Key %q, want key-1 on every sending", x.idemKey)
		}
	}
	mine, err := c.Claims(ctx, "hold")
	if err != nil || len(mine) != 1 || mine[0].ID != cl.ID {
		t.Errorf("claims after the retries: %+v %v, want exactly %s", mine, err, cl.ID)
	}
}

// TestClosedRoomJoin closes the room (announcing a reopening in two
// seconds): a join waits the 503's Retry-After and joins once staff
// reopen.
func TestClosedRoomJoin(t *testing.T) {
	n := startNode(t, nodetest.HeaderMode(node.Config{}))
	nodetest.CreateSale(t, n, "shut", openSale(5, 1, 100))
	until := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339)
	admin(t, n, "/admin/events/shut/close", fmt.Sprintf(`{"until":%q}`, until))
	ctx := ctxFor(t)
	rec := newRecorder(t)
	c := newClient(t, n, "bob", rec)
	done := make(chan error, 1)
	var tk client.Ticket
	go func() {
		var err error
		tk, err = c.Join(ctx, "shut")
		done <- err
	}()
	nodetest.WaitFor(t, "a refused join", 0, func() bool { return len(rec.of("/events/shut/join")) >= 1 })
	admin(t, n, "/admin/events/shut/reopen", "")
	if err := <-done; err != nil {
		t.Fatalf("join across a reopening: %v", err)
	}
	ex := rec.of("/events/shut/join")
	if len(ex) < 2 || ex[0].status != http.StatusServiceUnavailable || ex[len(ex)-1].status != 200 || tk.Ticket == "" {
		t.Fatalf("joins %v, want 503 closed, then 200", statuses(ex))
	}
	checkNeverSooner(t, ex)
}

// TestWaitFollowsPollPace queues a shopper behind others in a sale that
// admits one a second and checks Wait never polls sooner than the
// poll_after_ms of the answer before.
func TestWaitFollowsPollPace(t *testing.T) {
	n := startNode(t, nodetest.HeaderMode(node.Config{}))
	nodetest.CreateSale(t, n, "pace", openSale(10, 1, 1))
	ctx := ctxFor(t)
	rec := newRecorder(t)
	for i := range 3 {
		if _, err := newClient(t, n, fmt.Sprint("early", i), rec).Join(ctx, "pace"); err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t, n, "late", rec)
	tk, err := c.Join(ctx, "pace")
	if err != nil {
		t.Fatal(err)
	}
	var seen []client.Status
	s, err := c.Wait(ctx, "pace", tk.Ticket, func(s client.Status) { seen = append(seen, s) })
	if err != nil || s.State != client.StateAdmitted {
		t.Fatalf("wait: %+v %v", s, err)
	}
	ex := rec.of("/events/pace/status")
	if len(ex) < 2 || len(seen) != len(ex) {
		t.Fatalf("%d status polls (%d seen by onUpdate), want at least 2, each seen", len(ex), len(seen))
	}
	for i := 1; i < len(ex); i++ {
		prev, err := client.ParseStatus(ex[i-1].body)
		if err != nil {
			t.Fatal(err)
		}
		if prev.PollAfter <= 0 {
			t.Fatalf("answer %d has no poll_after_ms: %s", i-1, ex[i-1].body)
		}
		if gap := ex[i].sent.Sub(ex[i-1].done); gap < prev.PollAfter {
			t.Errorf("poll %d sent %v after an answer asking for %v", i, gap, prev.PollAfter)
		}
	}
}

func statuses(ex []exchange) []int {
	out := make([]int, len(ex))
	for i, e := range ex {
		out[i] = e.status
	}
	return out
}
