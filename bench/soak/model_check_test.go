//go:build soak && linux

package soak

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestPorcupineCatches feeds the model histories a broken build would
// answer (the stock check off by one, an Idempotency-Key ignored, a
// release accepted after the confirmation, a limit off by one; a unit
// cancelled without restock sold again, a claim cancelled twice), each of
// which must be Illegal, and healthy ones (retries, twins, replays, an
// ambiguous release, an expiry) which must be Ok. The histories go
// through history.record and modelOps, as the soak's do.
func TestPorcupineCatches(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// o is a request sent at ms and answered 10 ms later.
	o := func(ms int, user, kind, key string, status int, id, state string) op {
		return op{Sale: "s", User: user, Kind: kind, Key: key, Status: status, ClaimID: id, State: state, Start: at(ms), At: at(ms + 10)}
	}
	claim := func(ms int, user, key, id string) op { return o(ms, user, "claim", key, http.StatusCreated, id, "") }
	cases := []struct {
		name string
		ttl  time.Duration
		ops  []op
		want porcupine.CheckResult
		in   string // the partition named in the verdict
	}{
		{"healthy", 0, []op{
			o(0, "a", "claim", "k0", http.StatusServiceUnavailable, "", ""),
			claim(5, "a", "k0", "c1"),
			claim(6, "a", "k0", "c1"), // a twin on another node, concurrent
			o(30, "a", "replay", "k0", http.StatusOK, "c1", ""),
			claim(40, "b", "k0", "c2"),
			claim(50, "c", "k0", "c3"),
			o(60, "d", "claim", "k0", http.StatusGone, "", ""), // sold out
			o(70, "b", "release", "", http.StatusOK, "c2", ""),
			claim(75, "d", "k1", "c4"), // concurrent with the release's answer
			o(90, "a", "lookup", "", http.StatusOK, "c1", "confirmed"),
			o(100, "b", "lookup", "", http.StatusOK, "c2", "released"),
			o(110, "b", "replay", "k0", http.StatusOK, "c2", ""), // a released claim's key tells its old id
		}, porcupine.Ok, ""},
		{"ambiguous release", 0, []op{
			claim(0, "a", "k0", "c1"), claim(0, "b", "k0", "c2"), claim(0, "c", "k0", "c3"),
			{Sale: "s", User: "a", Kind: "release", ClaimID: "c1", Err: "timeout", Start: at(20), At: at(2020)},
			claim(30, "d", "k0", "c4"), // the release may have taken effect at 20
		}, porcupine.Ok, ""},
		{"expiry", 20 * time.Second, []op{
			claim(0, "a", "k0", "c1"), claim(0, "b", "k0", "c2"), claim(0, "c", "k0", "c3"),
			claim(20000, "d", "k0", "c4"), // a TTL later: one of them expired
		}, porcupine.Ok, ""},
		{"stock off by one", 0, []op{
			claim(0, "a", "k0", "c1"), claim(0, "b", "k0", "c2"), claim(0, "c", "k0", "c3"),
			claim(20, "d", "k0", "c4"),
		}, porcupine.Illegal, "the stock"},
		{"stock off by one, hidden by concurrency", 0, []op{
			claim(0, "a", "k0", "c1"), claim(0, "b", "k0", "c2"), claim(0, "c", "k0", "c3"),
			{Sale: "s", User: "c", Kind: "release", Status: http.StatusOK, ClaimID: "c3", Start: at(30), At: at(40)},
			claim(5, "d", "k0", "c4"), // answered before the release was sent
		}, porcupine.Illegal, "the stock"},
		{"stock before its expiry", 20 * time.Second, []op{
			claim(0, "a", "k0", "c1"), claim(0, "b", "k0", "c2"), claim(0, "c", "k0", "c3"),
			claim(15000, "d", "k0", "c4"), // 15 s: none may have expired
		}, porcupine.Illegal, "the stock"},
		{"idempotency key ignored", 0, []op{
			claim(0, "a", "k0", "c1"), claim(20, "a", "k0", "c2"),
		}, porcupine.Illegal, "user a"},
		{"idempotency key ignored by a twin", 0, []op{
			claim(0, "a", "k0", "c1"), claim(1, "a", "k0", "c2"),
		}, porcupine.Illegal, "user a"},
		{"release after confirm", 0, []op{
			claim(0, "a", "k0", "c1"),
			o(20, "a", "lookup", "", http.StatusOK, "c1", "confirmed"),
			o(40, "a", "release", "", http.StatusOK, "c1", ""),
		}, porcupine.Illegal, "user a"},
		{"confirmed after release", 0, []op{
			claim(0, "a", "k0", "c1"),
			o(20, "a", "release", "", http.StatusOK, "c1", ""),
			o(40, "a", "lookup", "", http.StatusOK, "c1", "confirmed"),
		}, porcupine.Illegal, "user a"},
		{"cancel with restock returns the unit", 0, []op{
			claim(0, "a", "k0", "c1"), claim(0, "b", "k0", "c2"), claim(0, "c", "k0", "c3"),
			o(20, "c", "cancel", "restock", http.StatusOK, "c3", ""),
			claim(40, "d", "k0", "c4"),
			o(60, "c", "lookup", "", http.StatusOK, "c3", "cancelled"),
		}, porcupine.Ok, ""},
		{"a confirmed claim cancelled", 0, []op{
			claim(0, "a", "k0", "c1"),
			o(20, "a", "lookup", "", http.StatusOK, "c1", "confirmed"),
			o(40, "a", "cancel", "", http.StatusOK, "c1", ""),
			o(60, "a", "cancel", "", http.StatusConflict, "c1", ""), // not_cancellable: nothing changes
		}, porcupine.Ok, ""},
		{"cancel without restock keeps the unit sold", 0, []op{
			claim(0, "a", "k0", "c1"), claim(0, "b", "k0", "c2"), claim(0, "c", "k0", "c3"),
			o(20, "c", "cancel", "", http.StatusOK, "c3", ""),
			claim(40, "d", "k0", "c4"),
		}, porcupine.Illegal, "the stock"},
		{"a cancelled claim keeps its user's slot", 0, []op{
			claim(0, "a", "k0", "c1"), claim(10, "a", "k1", "c2"),
			o(20, "a", "cancel", "restock", http.StatusOK, "c1", ""),
			claim(40, "a", "k2", "c3"),
		}, porcupine.Illegal, "user a"},
		{"cancelled twice", 0, []op{
			claim(0, "a", "k0", "c1"),
			o(20, "a", "cancel", "restock", http.StatusOK, "c1", ""),
			o(40, "a", "cancel", "restock", http.StatusOK, "c1", ""),
		}, porcupine.Illegal, "user a"},
		{"a released claim cancelled", 0, []op{
			claim(0, "a", "k0", "c1"),
			o(20, "a", "release", "", http.StatusOK, "c1", ""),
			o(40, "a", "cancel", "", http.StatusOK, "c1", ""),
		}, porcupine.Illegal, "user a"},
		{"released after a cancellation", 0, []op{
			claim(0, "a", "k0", "c1"),
			o(20, "a", "cancel", "", http.StatusOK, "c1", ""),
			o(40, "a", "lookup", "", http.StatusOK, "c1", "released"),
		}, porcupine.Illegal, "user a"},
		{"a signal_limit refusal changes nothing", 0, []op{
			claim(0, "a", "k0", "c1"),
			o(10, "b", "claim", "k0", http.StatusConflict, "", ""), // signal_limit: shares a's card
			claim(20, "c", "k0", "c2"), claim(30, "d", "k0", "c3"),
		}, porcupine.Ok, ""},
		{"an ambiguous cancel may have returned the unit", 0, []op{
			claim(0, "a", "k0", "c1"), claim(0, "b", "k0", "c2"), claim(0, "c", "k0", "c3"),
			{Sale: "s", User: "c", Kind: "cancel", Key: "restock", ClaimID: "c3", Err: "unreachable", Start: at(20), At: at(2020)},
			claim(30, "d", "k0", "c4"),
		}, porcupine.Ok, ""},
		{"limit off by one", 0, []op{
			claim(0, "a", "k0", "c1"), claim(20, "a", "k1", "c2"), claim(40, "a", "k2", "c3"),
		}, porcupine.Illegal, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory()
			h.open("s", 3, 2, 0)
			h.setClaimTTL("s", tc.ttl)
			for _, o := range tc.ops {
				h.record(o)
			}
			dir := t.TempDir()
			v := h.checkModel(dir, 10*time.Second)
			switch {
			case tc.want == porcupine.Ok && v.Failed != nil:
				t.Fatalf("%s, want Ok\n%s", v, v.Failed.render(1))
			case tc.want == porcupine.Illegal && v.Failed == nil:
				t.Fatalf("%s, want Illegal", v)
			case tc.want == porcupine.Illegal:
				if !strings.Contains(v.Failed.What, "Illegal") || !strings.Contains(v.Failed.What, tc.in) {
					t.Fatalf("%q, want Illegal in the partition of %s", v.Failed.What, tc.in)
				}
				if !strings.Contains(v.Failed.What, dir) {
					t.Errorf("%q names no visualization in %s", v.Failed.What, dir)
				}
				if len(v.Failed.Ops) == 0 {
					t.Error("no history around the violation")
				}
			}
		})
	}
}

// TestPorcupineTimeout: a search that runs out is not a pass. 40
// overlapping grants against a supply of 30 are Illegal, but showing it
// means trying every 30 of the 40: far more than 200 ms allows.
func TestPorcupineTimeout(t *testing.T) {
	h := newHistory()
	h.open("s", 30, 2, 0)
	t0 := time.Now()
	for i := range 40 {
		u := fmt.Sprintf("u%d", i)
		h.record(op{Sale: "s", User: u, Kind: "claim", Key: "k", Status: http.StatusCreated, ClaimID: "c" + u, Start: t0, At: t0.Add(time.Second)})
	}
	start := time.Now()
	v := h.checkModel(t.TempDir(), 200*time.Millisecond)
	if v.Failed == nil || !strings.Contains(v.Failed.What, "not checked (timeout") {
		t.Fatalf("%s, want not checked (timeout)", v)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the check took %s with a timeout of 200ms", took)
	}
}
