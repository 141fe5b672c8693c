package claim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
)

// TestRebuildRestoresSignals: a rebuild after a failover that lost the
// bucket's claim state (the held claims, the records, the signal sets)
// restores each held claim's signal sets from its granted event, as it
// restores the user's held claims: after it a second user with the held
// claim's card is refused (ErrSignalLimit naming payment), the restored
// set expires when the claim's did, and a released claim's card is free
// again (its restored record lists the set, so the release gives the
// count back). Before, the sets were not restored and the second user
// was granted.
func TestRebuildRestoresSignals(t *testing.T) {
	e := singleRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := saleConfig(t, e, Sale{ID: "ring", Buckets: 1}, 10)
	until := time.Now().Add(3 * time.Hour).Truncate(time.Millisecond)
	card := func(hash string) []Signal {
		return []Signal{{Dim: SignalPayment, Hash: hash, Max: 1}}
	}
	const cardA, cardB = "00112233445566778899aabbccddeeff", "ffeeddccbbaa99887766554433221100"
	claimWith := func(user, hash string) (Result, error) {
		return e.svc.Claim(ctx, Request{Event: cfg.ID, User: user, IdemKey: "k", Limit: 1, Buckets: 1, Pos: 1, Signals: card(hash), SignalsUntil: until})
	}
	if _, err := claimWith("alice", cardA); err != nil {
		t.Fatal(err)
	}
	carol, err := claimWith("carol", cardB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Release(ctx, cfg.ID, carol.ClaimID, "carol"); err != nil {
		t.Fatal(err)
	}
	e.svc.flush(ctx, func(err error) { t.Fatal(err) }) // on the stream
	// The failover: a replica promoted without the bucket's claim state.
	k := bucketOf(cfg.ID, 0)
	lost := []string{k.records(), k.outbox(), k.userClaims("alice"), k.userClaims("carol"), k.signal(SignalPayment, cardA), k.signal(SignalPayment, cardB)}
	if err := e.rdb.Del(ctx, lost...).Err(); err != nil {
		t.Fatal(err)
	}
	rep, err := NewRebuilder(e.svc, e.js, event.NewStore(e.rdb)).Rebuild(ctx, cfg.ID)
	if err != nil || rep.Granted != 2 || rep.Released != 1 {
		t.Fatalf("rebuild: %+v %v, want 2 granted, 1 released", rep, err)
	}
	if err := configsResume(ctx, e, cfg.ID); err != nil {
		t.Fatal(err)
	}
	var se *SignalLimitError
	if _, err := claimWith("bob", cardA); !errors.As(err, &se) || se.Dim != SignalPayment {
		t.Fatalf("bob with alice's card after the rebuild: %v, want the payment signal limit", err)
	}
	if at, err := e.rdb.PExpireTime(ctx, k.signal(SignalPayment, cardA)).Result(); err != nil || at.Milliseconds() != until.UnixMilli() {
		t.Errorf("the restored set expires at %v (%v), want %v", at, err, until.UnixMilli())
	}
	if _, err := claimWith("dave", cardB); err != nil {
		t.Fatalf("dave with the released card after the rebuild: %v, want granted", err)
	}
}

// configsResume unpauses sale id after a rebuild left it paused.
func configsResume(ctx context.Context, e *env, id string) error {
	s := event.NewStore(e.rdb)
	cfg, err := s.Get(ctx, id)
	if err != nil || !cfg.Paused {
		return err
	}
	cfg.Paused = false
	_, err = s.Put(ctx, cfg)
	return err
}

// TestRecordSignals: a claim record's signal set keys become a granted
// event's signals, for a grant the rebuild republishes from Redis.
func TestRecordSignals(t *testing.T) {
	k := bucketOf("ring", 0)
	raw := `{"user":"u","pos":1,"at":1,"status":"pending","idem":"k","sig":["` + k.signal("payment", "00ff") + `","` + k.signal("device", "11ee") + `"]}`
	for _, c := range []struct{ raw, want string }{
		{raw, "payment:00ff device:11ee"},
		{`{"user":"u","status":"pending"}`, ""},
		{`{not json`, ""},
	} {
		if got := recordSignals(c.raw); got != c.want {
			t.Errorf("recordSignals(%s) = %q, want %q", c.raw, got, c.want)
		}
	}
	if got := signalKeys(k, "payment:00112233445566778899aabbccddeeff bogus payment:ffeeddccbbaa99887766554433221100 smell:00112233445566778899aabbccddeeff"); len(got) != 1 || got[0] != k.signal("payment", "00112233445566778899aabbccddeeff") {
		t.Errorf("signalKeys kept %v, want the first payment only (malformed, repeated and unknown left out)", got)
	}
	// The sweep's dimensions: a token claim's name holds a colon of its own.
	tok := SignalToken + "phone"
	if got := signalKeys(k, tok+":00112233445566778899aabbccddeeff network:ffeeddccbbaa99887766554433221100"); len(got) != 2 || got[0] != k.signal(tok, "00112233445566778899aabbccddeeff") {
		t.Errorf("signalKeys of a token claim and a network kept %v, want both", got)
	}
}
