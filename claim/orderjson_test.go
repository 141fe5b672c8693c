package claim

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
	"unicode"
)

// referenceEpoch is what epochOf replaced: encoding/json's reading.
func referenceEpoch(payload []byte) uint64 {
	var e struct {
		Epoch uint64 `json:"epoch"`
	}
	_ = json.Unmarshal(payload, &e)
	return e.Epoch
}

// TestOrderEventJSON: the hand-written form of an order event is byte for
// byte json.Marshal's, and what json.Marshal would escape goes to it.
func TestOrderEventJSON(t *testing.T) {
	at := time.Date(2026, 11, 30, 21, 5, 7, 123456789, time.UTC)
	cases := []OrderEvent{
		{Type: KindGranted, Event: "bclaim", ClaimID: "3-0a1b2c3d4e5f60718293a4b5", User: "c42", Pos: 42, Units: 1, At: at, Idem: "jti:abc-DEF_1.2"},
		{Type: KindGranted, Event: "e", ClaimID: "0-00", User: "", Pos: -1, Units: 0, At: at.Truncate(time.Second)},
		{Type: KindReleased, Event: "e", ClaimID: "1-ff", User: "u", At: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), Reason: ReasonExpired, Epoch: 77},
		{Type: KindGranted, Event: "e", ClaimID: "1-ff", User: "u", Pos: 7, Units: 1, At: at, Idem: "k", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Epoch: 3},
		{Type: KindGranted, Event: "e", ClaimID: "1-ff", User: `a"b\c<d>&é`, At: at},                      // escaped by json.Marshal
		{Type: KindGranted, Event: "e", ClaimID: "1-ff", User: "u", At: at.In(time.FixedZone("x", 3600))}, // not UTC
		{Type: KindGranted, Event: "e", ClaimID: "1-ff", User: "u", At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Type: KindGranted, Event: "e", ClaimID: "1-ff", User: "u", At: at, Signals: "payment:00ff device:11ee", SignalsUntil: at.Add(time.Hour), Epoch: 4},
		{Type: KindGranted, Event: "e", ClaimID: "1-ff", User: "u", At: at, Signals: "device:11ee"},
		{Type: KindGranted, Event: "e", ClaimID: "1-ff", User: "u", At: at, Signals: "a<b", SignalsUntil: at.In(time.FixedZone("x", 60))}, // escaped, not UTC
	}
	for i, e := range cases {
		want, wantErr := json.Marshal(&e)
		got, err := marshalOrderEvent(&e)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Errorf("case %d: got %s (%v), json.Marshal %s (%v)", i, got, err, want, wantErr)
		}
	}
}

// FuzzOrderEventJSON holds marshalOrderEvent equal to json.Marshal.
func FuzzOrderEventJSON(f *testing.F) {
	f.Add("granted", "bclaim", "3-0a1b", "c42", int64(42), int64(1), int64(1764536707123456789), "jti:x", "", "", uint64(0))
	f.Add("granted", "bclaim", "3-0a1b", "c42", int64(42), int64(1), int64(1764536707123456789), "jti:x", "", "4bf92f3577b34da6a3ce929d0e0e4736", uint64(2))
	f.Add("released", "e", "0-00", "ü\"", int64(-5), int64(0), int64(-62135596800000000), "", "expired", "<\u2028>", uint64(9))
	f.Fuzz(func(t *testing.T, typ, ev, id, user string, pos, units, atNs int64, idem, reason, traceID string, epoch uint64) {
		e := OrderEvent{Type: Kind(typ), Event: ev, ClaimID: id, User: user, Pos: pos, Units: units,
			At: time.Unix(0, atNs).UTC(), Idem: idem, Reason: Reason(reason), TraceID: traceID, Epoch: epoch}
		want, wantErr := json.Marshal(&e)
		got, err := marshalOrderEvent(&e)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("got %s (%v), json.Marshal %s (%v)", got, err, want, wantErr)
		}
	})
}

// TestEpochOf: epochOf reads what json.Unmarshal reads, claim.lua's
// appended epoch included, for valid and invalid payloads.
func TestEpochOf(t *testing.T) {
	for _, p := range []string{
		`{"type":"granted","event":"e","claim_id":"1-ff","user":"u","pos":1,"units":1,"at":"2026-01-01T00:00:00Z","idem":"k"}`,
		`{"type":"granted","event":"e","claim_id":"1-ff","user":"u","pos":1,"units":1,"at":"2026-01-01T00:00:00Z","idem":"k","epoch":1234}`,
		`{"epoch":5,"epoch":7}`, `{"EPOCH":5}`, `{"Epoch":3,"epoch":0}`, `{"\u0065poch":9}`, `{"epoch":"x","epoch":4}`,
		`{"a":"x\",\"epoch\":5}"}`, `{"a":{"b":1,"epoch":5}}`, `{"a":1,"epoch":05}`, `{"a":1,"epoch":-5}`, `{"a":1,"epoch":5.0}`,
		`{"a":1,"epoch":18446744073709551616}`, `{"a":1,"epoch":18446744073709551615}`, `[1,"epoch":5}`, `{"a":1,"epoch":}`,
		`{"a":1 "epoch":5}`, `{"a":[1,"epoch":5}`, `not json "epoch":5}`, `{"epoch":0}`, `{}`, ``, `{"user":"epochal","epoch":2}`,
	} {
		if got, want := epochOf([]byte(p)), referenceEpoch([]byte(p)); got != want {
			t.Errorf("epochOf(%s) = %d, json.Unmarshal reads %d", p, got, want)
		}
	}
}

// FuzzEpochOf holds epochOf equal to json.Unmarshal's reading.
func FuzzEpochOf(f *testing.F) {
	f.Add([]byte(`{"type":"granted","user":"u","epoch":12}`))
	f.Add([]byte(`{"EpOcH":3}`))
	f.Fuzz(func(t *testing.T, p []byte) {
		if got, want := epochOf(p), referenceEpoch(p); got != want {
			t.Fatalf("epochOf(%q) = %d, json.Unmarshal reads %d", p, got, want)
		}
	})
}

// TestEpochLettersFoldOnlyInASCII backs containsFoldEpoch: no character
// outside ASCII folds to a letter of "epoch" (encoding/json matches keys
// with Unicode case folding).
func TestEpochLettersFoldOnlyInASCII(t *testing.T) {
	for _, c := range "epochEPOCH" {
		for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
			if f > unicode.MaxASCII {
				t.Errorf("%q folds to %q", c, f)
			}
		}
	}
}
