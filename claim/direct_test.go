package claim

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/anteroom/anteroom/internal/testenv"
)

// TestFenceWithDirectGets: on a stream with DirectGets the fence reads the
// markers with direct gets, and still refuses a grant stored after a
// marker that ended its epoch while it acknowledges one of the new epoch,
// and a rebuild still reads every marker. A replicated stream never gets
// allow_direct.
func TestFenceWithDirectGets(t *testing.T) {
	if StreamConfig(3, DirectGets()).AllowDirect || !StreamConfig(1, DirectGets()).AllowDirect || StreamConfig(1).AllowDirect {
		t.Fatal("DirectGets must set allow_direct on a single-replica stream only, and only when asked")
	}
	ns := testenv.StartNATS(t)
	nc, err := nats.Connect(ns.URL())
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
	if err := EnsureStream(ctx, js, 1, DirectGets()); err != nil {
		t.Fatal(err)
	}
	// Direct gets are requests on their own subjects: a plain subscriber
	// sees them too.
	var direct atomic.Int64
	sub, err := nc.Subscribe("$JS.API.DIRECT.GET."+StreamName+".>", func(*nats.Msg) { direct.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	const ev = "direct"
	mark, err := publishMarker(ctx, js, ev, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := NewPublisher(js)
	old := []byte(`{"type":"granted","event":"direct","claim_id":"0-aa","user":"u1","pos":1,"units":1,"at":"2026-01-01T00:00:00Z"}`)
	if err := p.PublishGrant(ctx, ev, "0-aa", old); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("grant of the ended epoch: %v, want ErrSuperseded", err)
	}
	cur := []byte(`{"type":"granted","event":"direct","claim_id":"0-bb","user":"u2","pos":2,"units":1,"at":"2026-01-01T00:00:00Z","epoch":` +
		strconv.FormatUint(mark, 10) + `}`)
	if err := p.PublishGrant(ctx, ev, "0-bb", cur); err != nil {
		t.Fatalf("grant of the current epoch: %v", err)
	}
	// A rebuild's walk over the markers ends on a read that finds none.
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readMarkers(ctx, st, ev); err != nil || len(got) != 1 || got[0] != mark {
		t.Fatalf("markers read back: %v, %v; want [%d]", got, err, mark)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if direct.Load() == 0 {
		t.Error("the fence read the markers without direct gets")
	}
}
