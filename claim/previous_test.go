package claim

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/nats-io/nats.go/jetstream"
)

// previousFormat reads testdata/previous/name: a record or order event as
// the previous release writes it (testdata/previous/README.md).
func previousFormat(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "previous", name))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(raw)
}

// membersKept reports the members of old that cur lacks or holds with
// another JSON type: what a reader of the previous release would miss.
// Members named in optional may be missing (both releases omit them
// when they have no value).
func membersKept(t *testing.T, old, cur []byte, optional ...string) []string {
	t.Helper()
	var o, c map[string]any
	if err := json.Unmarshal(old, &o); err != nil {
		t.Fatalf("previous %s: %v", old, err)
	}
	if err := json.Unmarshal(cur, &c); err != nil {
		t.Fatalf("this release's %s: %v", cur, err)
	}
	kind := func(v any) string {
		switch v.(type) {
		case string:
			return "string"
		case float64:
			return "number"
		case bool:
			return "bool"
		case nil:
			return "null"
		case map[string]any:
			return "object"
		default:
			return "array"
		}
	}
	var lost []string
	for k, v := range o {
		w, ok := c[k]
		switch {
		case !ok && slices.Contains(optional, k):
		case !ok:
			lost = append(lost, k+" (missing)")
		case kind(v) != kind(w):
			lost = append(lost, k+" ("+kind(v)+" now "+kind(w)+")")
		}
	}
	slices.Sort(lost)
	return lost
}

// TestPreviousReleaseFormats checks the rolling-upgrade rule
// (docs/operate.md, "Rolling upgrades") on what the claim scripts and the
// order worker share across releases: testdata/previous holds a claim
// record and two order events as the previous release writes them.
//
// This release reads what the previous one wrote: the previous record,
// stored in place of a fresh claim's, is looked up, listed, confirmed and
// (a second one) released by this release's scripts; the previous order
// events decode with every member.
//
// This release writes what the previous one reads: the records and order
// events of a claim it grants and releases have every member the previous
// ones have, with the same JSON type, and a pending record carries the
// literal "status":"pending" that confirm.lua and release.lua rewrite in
// place (a reformatted record would be refused by the previous release's
// scripts, not misread).
func TestPreviousReleaseFormats(t *testing.T) {
	e := singleRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now().UTC()
	cfg := event.Config{ID: "compat", Name: "compat", Supply: 10, PerUserLimit: 2,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Buckets: 1}
	cfg.Defaults()
	if _, err := event.NewStore(e.rdb).Put(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	sale := SaleOf(cfg)
	if err := e.store.Lay(ctx, sale, cfg.OnSale()); err != nil {
		t.Fatal(err)
	}
	oldRecord := previousFormat(t, "record.json")
	records := bucketOf(cfg.ID, 0).records()
	grant := func(key string) string {
		t.Helper()
		res, err := e.svc.Claim(ctx, Request{Event: cfg.ID, User: "ann", IdemKey: key, Pos: 7, Limit: 2, Buckets: 1, ClaimTTL: time.Hour})
		if err != nil {
			t.Fatalf("claim %s: %v", key, err)
		}
		return res.ClaimID
	}

	// This release writes what the previous one reads.
	fresh := grant("k0")
	raw, err := e.rdb.HGet(ctx, records, fresh).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if lost := membersKept(t, oldRecord, raw); len(lost) > 0 {
		t.Errorf("a claim record of this release lacks members the previous release reads: %v\nprevious %s\nnow      %s", lost, oldRecord, raw)
	}
	if !bytes.Contains(raw, []byte(`"status":"pending"`)) {
		t.Errorf(`a pending record of this release does not read "status":"pending", which confirm.lua and release.lua rewrite: %s`, raw)
	}
	if _, err := e.svc.Release(ctx, cfg.ID, fresh, "ann"); err != nil {
		t.Fatalf("release: %v", err)
	}
	for _, kind := range []Kind{KindGranted, KindReleased} {
		msg, err := lastRaw(ctx, e.js, Subject(cfg.ID, kind))
		if err != nil {
			t.Fatalf("the %s event on the stream: %v", kind, err)
		}
		// A granted event carries an epoch once its bucket was rebuilt.
		if lost := membersKept(t, previousFormat(t, string(kind)+".json"), msg, "epoch"); len(lost) > 0 {
			t.Errorf("a %s order event of this release lacks members the previous release reads: %v\n%s", kind, lost, msg)
		}
	}

	// This release reads what the previous one wrote: two claims whose
	// records are replaced by the previous release's bytes.
	confirmed, released := grant("k1"), grant("k2")
	for _, id := range []string{confirmed, released} {
		if err := e.rdb.HSet(ctx, records, id, oldRecord).Err(); err != nil {
			t.Fatal(err)
		}
	}
	want := Record{ID: confirmed, User: "ann", Pos: 7, AtMs: 1764662400123, Status: StatusPending, Idem: "k1"}
	if got, err := e.store.Lookup(ctx, cfg.ID, confirmed); err != nil || got != want {
		t.Errorf("lookup of a previous record: %+v %v, want %+v", got, err, want)
	}
	mine, err := e.store.Mine(ctx, sale, "ann")
	pending := 0
	for _, r := range mine {
		if r.Status == StatusPending && r.Pos == 7 && r.Idem == "k1" {
			pending++
		}
	}
	if err != nil || len(mine) != 3 || pending != 2 {
		t.Errorf("my claims over previous records: %+v %v, want the released one and the two previous pending", mine, err)
	}
	if st, err := e.store.Confirm(ctx, cfg.ID, confirmed); err != nil || st != StatusConfirmed {
		t.Errorf("confirm of a previous record: %q %v, want confirmed", st, err)
	}
	if rec, err := e.svc.Release(ctx, cfg.ID, released, "ann"); err != nil || rec.Status != StatusReleased || rec.Pos != 7 {
		t.Errorf("release of a previous record: %+v %v, want released at position 7", rec, err)
	}
	if tot, err := e.store.Totals(ctx, sale); err != nil || tot.Granted != 3 || tot.Released != 2 {
		t.Errorf("totals: %+v %v, want 3 granted and 2 released", tot, err)
	}

	// The previous order events decode with every member.
	for name, want := range map[string]OrderEvent{
		"granted.json": {Type: KindGranted, Event: "compat", ClaimID: "0-0123456789abcdef01234567", User: "ann", Pos: 7, Units: 1,
			At: time.Date(2026, 12, 2, 8, 0, 0, 123456789, time.UTC), Idem: "k1", Epoch: 42},
		"released.json": {Type: KindReleased, Event: "compat", ClaimID: "0-0123456789abcdef01234567", User: "ann", Pos: 7, Units: 1,
			At: time.Date(2026, 12, 2, 8, 15, 0, 500000000, time.UTC), Idem: "k1", Reason: "expired"},
	} {
		raw := previousFormat(t, name)
		var got OrderEvent
		if err := json.Unmarshal(raw, &got); err != nil || got != want {
			t.Errorf("%s decodes to %+v %v, want %+v", name, got, err, want)
		}
		if ep := epochOf(raw); ep != want.Epoch {
			t.Errorf("%s: epoch read from the payload %d, want %d", name, ep, want.Epoch)
		}
	}
}

// lastRaw returns the payload of the last message on subject.
func lastRaw(ctx context.Context, js jetstream.JetStream, subject string) ([]byte, error) {
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		return nil, err
	}
	m, err := st.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(string(m.Data), "{") {
		return nil, os.ErrInvalid
	}
	return m.Data, nil
}
