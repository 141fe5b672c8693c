package claim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/anteroom/anteroom/internal/testenv"
)

// r3Stream starts a 3-server NATS cluster with the order stream on three
// replicas and returns a connection and its JetStream context.
func r3Stream(t *testing.T) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	cl := testenv.StartNATSCluster(t, 3)
	nc, err := nats.Connect(cl.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := EnsureStream(ctx, js, 3); err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// apiCounter counts JetStream API requests by kind, seen by a plain
// subscriber on $JS.API.> (requests reach every subscriber). Connected to
// the publisher's server, it has seen every request the publisher made
// before its own round trip: reads flushes, then counts what the
// subscription's channel holds (a Flush does not wait for an async
// handler, which undercounted reads under load).
type apiCounter struct {
	mu sync.Mutex
	n  map[string]int
	nc *nats.Conn
	ch chan *nats.Msg
}

func countAPI(t *testing.T, url string) *apiCounter {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c := &apiCounter{n: map[string]int{}, nc: nc, ch: make(chan *nats.Msg, 1<<16)}
	if _, err := nc.ChanSubscribe("$JS.API.>", c.ch); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return c
}

// reads returns how many message reads (the fence's requests) it saw.
func (c *apiCounter) reads(t *testing.T) int {
	t.Helper()
	// A round trip on the counting connection: every request sent before
	// it by the other connection has reached the channel (one server,
	// routes in order).
	if err := c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		select {
		case m := <-c.ch:
			kind := strings.TrimPrefix(m.Subject, "$JS.API.")
			if strings.HasPrefix(kind, "DIRECT.GET") {
				kind = "DIRECT.GET"
			} else if i := strings.LastIndex(kind, "."+StreamName); i >= 0 {
				kind = kind[:i]
			}
			c.n[kind]++
			continue
		default:
		}
		return c.n["STREAM.MSG.GET"] + c.n["DIRECT.GET"]
	}
}

// grantPayload is a granted event of claim id in epoch.
func grantPayload(ev, id string, epoch uint64) []byte {
	return fmt.Appendf(nil, `{"type":"granted","event":%q,"claim_id":%q,"user":"u-%s","pos":1,"units":1,"at":"2026-01-01T00:00:00Z","epoch":%d}`, ev, id, id, epoch)
}

// TestFenceViewR3 runs the fence from the publisher's view on a stream
// with three replicas: grants of the current epoch are acknowledged with
// no read of the stream; a marker stored between a grant's decision and
// its store voids it even when the view had not yet delivered the marker
// at the grant's PubAck (the check waits for the view to reach the grant,
// or reads the stream when the view lags too long) — the interleaving the
// view must never get wrong; a grant stored before the marker stays
// acknowledged, as the rebuild counted it.
func TestFenceViewR3(t *testing.T) {
	cl := testenv.StartNATSCluster(t, 3)
	nc, err := nats.Connect(cl.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := EnsureStream(ctx, js, 3); err != nil {
		t.Fatal(err)
	}
	const ev = "view"
	// A marker before the view starts: grants of epoch 0 are judged
	// against it with one read, kept.
	old, err := publishMarker(ctx, js, ev, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := NewPublisher(js)
	var holding atomic.Bool
	gate := make(chan struct{})
	p.holdView = func(m jetstream.Msg) {
		if holding.Load() && strings.HasPrefix(m.Subject(), EpochSubject("")) {
			<-gate
		}
	}
	follow(t, p)
	api := countAPI(t, nc.ConnectedUrl())

	if err := p.PublishGrant(ctx, ev, "0-void", grantPayload(ev, "0-void", 0)); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("grant of epoch 0 after marker %d: %v, want ErrSuperseded", old, err)
	}
	// A loaded machine may stall the view past viewWait, which reads the
	// stream by design: the count of reads is only a fair test when the
	// wait cannot run out.
	p.viewWait = time.Minute
	before := api.reads(t)
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("0-a%d", i)
			if err := p.PublishGrant(ctx, ev, id, grantPayload(ev, id, old)); err != nil {
				t.Errorf("grant %s of the current epoch: %v", id, err)
			}
		}()
	}
	wg.Wait()
	// At most one read: the markers up to the view's start are read once
	// per (event, epoch) and kept, when a view (re)started after the
	// grants' epoch; never one per grant.
	if got := api.reads(t) - before; got > 1 {
		t.Errorf("%d grants of the current epoch made %d reads of the stream, want at most one", n, got)
	}
	p.viewWait = 0

	// The marker lands between the grant's decision (epoch old) and its
	// store, and the view delivers it only after the grant's PubAck.
	for _, lag := range []struct {
		name    string
		release time.Duration // after the grant is stored; 0: after the check returns
	}{{"view catches up", time.Millisecond}, {"view lags past the wait", 0}} {
		t.Run(lag.name, func(t *testing.T) {
			holding.Store(true)
			mark, err := publishMarker(ctx, js, ev, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			id := "0-late-" + strings.ReplaceAll(lag.name, " ", "-")
			released := make(chan struct{})
			if lag.release > 0 {
				go func() {
					defer close(released)
					st, _ := js.Stream(ctx, StreamName)
					testenv.WaitFor(t, "the grant stored", 10*time.Second, func() bool {
						info, err := st.Info(ctx)
						return err == nil && info.State.LastSeq > mark
					})
					time.Sleep(lag.release)
					holding.Store(false)
					gate <- struct{}{}
				}()
			}
			readsBefore := api.reads(t)
			err = p.PublishGrant(ctx, ev, id, grantPayload(ev, id, old))
			if !errors.Is(err, ErrSuperseded) {
				t.Fatalf("grant of epoch %d stored after marker %d: %v, want ErrSuperseded", old, mark, err)
			}
			reads := api.reads(t) - readsBefore
			if lag.release == 0 {
				holding.Store(false)
				gate <- struct{}{}
				if reads == 0 {
					t.Error("the view had not delivered the marker, yet the grant was judged without reading the stream")
				}
			} else {
				<-released
			}
			t.Logf("judged with %d reads of the stream", reads)
			testenv.WaitFor(t, "the view past the marker", 10*time.Second, func() bool {
				v := p.view.Load()
				v.mu.Lock()
				defer v.mu.Unlock()
				return v.upTo > mark
			})
			// A grant stored before a marker stays acknowledged.
			early := id + "-early"
			seq, err := p.publish(ctx, Subject(ev, KindGranted), early, grantPayload(ev, early, mark))
			if err != nil {
				t.Fatal(err)
			}
			next, err := publishMarker(ctx, js, ev, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			first, err := p.view.Load().firstAfter(ctx, p.stream.get, ev, mark, seq, 5*time.Second)
			if err != nil || judged(early, seq, first) != nil {
				t.Errorf("grant at %d before marker %d: first marker after its epoch %d, %v; want it acknowledged", seq, next, first, err)
			}
			old = next
		})
	}
}

// TestFenceViewStalled: a view that stops moving makes grants read the
// stream after one bounded wait, not wait on every grant; the answers are
// the fence's all along.
func TestFenceViewStalled(t *testing.T) {
	_, js := r3Stream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ev = "stall"
	p := NewPublisher(js)
	gate := make(chan struct{})
	var stalled atomic.Bool
	p.holdView = func(jetstream.Msg) {
		if stalled.Load() {
			<-gate
		}
	}
	follow(t, p)
	t.Cleanup(func() { close(gate) })
	if err := p.PublishGrant(ctx, ev, "0-a", grantPayload(ev, "0-a", 0)); err != nil {
		t.Fatal(err)
	}
	stalled.Store(true)
	mark, err := publishMarker(ctx, js, ev, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		id := fmt.Sprint("0-s", i)
		if err := p.PublishGrant(ctx, ev, id, grantPayload(ev, id, 0)); !errors.Is(err, ErrSuperseded) {
			t.Fatalf("grant %s of epoch 0 after marker %d, view stalled: %v, want ErrSuperseded", id, mark, err)
		}
		if err := p.PublishGrant(ctx, ev, id+"n", grantPayload(ev, id+"n", mark)); err != nil {
			t.Fatalf("grant of the current epoch, view stalled: %v", err)
		}
	}
	v := p.view.Load()
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.stale {
		t.Error("the stalled view is not marked stale")
	}
}
