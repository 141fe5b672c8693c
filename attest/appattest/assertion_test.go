package appattest

import (
	"bytes"
	"context"
	"errors"
	"github.com/anteroom/anteroom/attest/attesttest"
	"sync"
	"sync/atomic"
	"testing"
)

var testClientData = []byte(`{"challenge":"c-41","body":"claim 1 unit"}`)

// attestedKey attests d and returns its key as a server stores it.
func attestedKey(t testing.TB, v *Verifier, ca *attesttest.AppleCA, d *attesttest.Device) Key {
	t.Helper()
	a, err := v.VerifyAttestation(testNow, attest(t, ca, d, attestation{}), d.ID, testChallenge)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := ParseKey(a.Key.PublicKeyBytes())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stored.ID, a.Key.ID) {
		t.Fatalf("stored key id %x, want %x", stored.ID, a.Key.ID)
	}
	return stored
}

func TestAssertionsCountUp(t *testing.T) {
	ca, d := newTestCA(t), newDevice(t)
	v := newTestVerifier(t, ca, Config{})
	key := attestedKey(t, v, ca, d)
	last := uint32(0)
	for _, c := range []uint32{1, 2, 7, 1 << 31, 1<<32 - 1} {
		got, err := v.VerifyAssertion(key, last, d.Assertion(t, testAppID, c, testClientData), testClientData)
		if err != nil || got != c {
			t.Fatalf("assertion with counter %d after %d: %d, %v; want %d, nil", c, last, got, err, c)
		}
		last = got
	}
}

func TestAssertionRefused(t *testing.T) {
	ca, d := newTestCA(t), newDevice(t)
	v := newTestVerifier(t, ca, Config{})
	key := attestedKey(t, v, ca, d)
	other := newDevice(t)
	genuine := d.Assertion(t, testAppID, 5, testClientData)
	// The device signed counter 5; the attacker sends counter 6 with that signature.
	raised := attesttest.EncodeAssertion(t, d.Sign(t, attesttest.AuthData(testAppID, 1, 5), testClientData), attesttest.AuthData(testAppID, 1, 6))

	tests := []struct {
		name       string
		assertion  []byte
		clientData []byte
		last       uint32
		want       error
	}{
		{name: "replayed: counter equal to the last", assertion: genuine, last: 5, want: ErrReplay},
		{name: "older: counter below the last", assertion: genuine, last: 9, want: ErrReplay},
		{name: "counter 0 after the attestation", assertion: d.Assertion(t, testAppID, 0, testClientData), want: ErrReplay},
		{name: "signed by another key", assertion: other.Assertion(t, testAppID, 6, testClientData), want: ErrAttestation},
		{name: "another key replaying a high counter", assertion: other.Assertion(t, testAppID, 1000, testClientData), last: 999, want: ErrAttestation},
		{name: "other client data", assertion: genuine, clientData: []byte(`{"challenge":"c-41","body":"claim 9 units"}`), want: ErrAttestation},
		{name: "another app", assertion: d.Assertion(t, "ABCDE12345.com.example.other", 6, testClientData), want: ErrAttestation},
		{name: "counter raised after signing", assertion: raised, want: ErrAttestation},
		{name: "signature not DER", assertion: attesttest.EncodeAssertion(t, bytes.Repeat([]byte{1}, 64), attesttest.AuthData(testAppID, 1, 6)), want: ErrAttestation},
		{name: "garbage", assertion: []byte("garbage"), want: ErrMalformed},
		{name: "empty", assertion: nil, want: ErrMalformed},
		{name: "truncated", assertion: genuine[:len(genuine)-1], want: ErrMalformed},
		{name: "trailing bytes", assertion: append(bytes.Clone(genuine), 0), want: ErrMalformed},
		{name: "no signature", assertion: attesttest.EncodeAssertion(t, nil, attesttest.AuthData(testAppID, 1, 6)), want: ErrMalformed},
		{name: "authenticatorData short", assertion: attesttest.EncodeAssertion(t, []byte{0x30, 0}, attesttest.AuthData(testAppID, 1, 6)[:36]), want: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clientData := tt.clientData
			if clientData == nil {
				clientData = testClientData
			}
			got, err := v.VerifyAssertion(key, tt.last, tt.assertion, clientData)
			if !errors.Is(err, tt.want) || got != 0 {
				t.Errorf("got %d, %v; want 0, %v", got, err, tt.want)
			}
		})
	}
	for n := range len(genuine) {
		if _, err := v.VerifyAssertion(key, 0, genuine[:n], testClientData); !errors.Is(err, ErrMalformed) {
			t.Fatalf("first %d of %d bytes: got %v, want ErrMalformed", n, len(genuine), err)
		}
	}
}

// casStore is a CounterStore over a map, compare-and-set under a mutex,
// as a Redis script would be.
type casStore struct {
	mu   sync.Mutex
	last map[string]uint32
}

func (s *casStore) AdvanceCounter(_ context.Context, keyID []byte, counter uint32) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if counter <= s.last[string(keyID)] {
		return false, nil
	}
	s.last[string(keyID)] = counter
	return true, nil
}

// TestOneOfManyConcurrentReplaysGoesOn: 32 requests carrying the same
// assertion all pass VerifyAssertion against the same stored counter;
// Advance lets exactly one of them on.
func TestOneOfManyConcurrentReplaysGoesOn(t *testing.T) {
	ca, d := newTestCA(t), newDevice(t)
	v := newTestVerifier(t, ca, Config{})
	key := attestedKey(t, v, ca, d)
	store := &casStore{last: map[string]uint32{}}
	assertion := d.Assertion(t, testAppID, 1, testClientData)
	var passed, replays atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			c, err := v.VerifyAssertion(key, 0, assertion, testClientData)
			if err != nil {
				t.Errorf("verify: %v", err)
				return
			}
			switch err := Advance(context.Background(), store, key.ID, c); {
			case err == nil:
				passed.Add(1)
			case errors.Is(err, ErrReplay):
				replays.Add(1)
			default:
				t.Errorf("advance: %v", err)
			}
		})
	}
	wg.Wait()
	if passed.Load() != 1 || replays.Load() != 31 {
		t.Errorf("%d passed and %d replays, want 1 and 31", passed.Load(), replays.Load())
	}
}

func TestAdvanceStoreError(t *testing.T) {
	boom := errors.New("redis down")
	err := Advance(context.Background(), failingStore{boom}, []byte("k"), 1)
	if !errors.Is(err, boom) || errors.Is(err, ErrReplay) {
		t.Errorf("got %v, want the store's error, not ErrReplay", err)
	}
}

type failingStore struct{ err error }

func (f failingStore) AdvanceCounter(context.Context, []byte, uint32) (bool, error) {
	return false, f.err
}

func TestParseKeyRefusesOtherCurves(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":      nil,
		"compressed": append([]byte{2}, make([]byte, 32)...),
		"off curve":  append([]byte{4}, make([]byte, 64)...),
	} {
		if _, err := ParseKey(b); err == nil {
			t.Errorf("%s: ParseKey accepted it", name)
		}
	}
}

func BenchmarkVerifyAssertion(b *testing.B) {
	ca, d := newTestCA(b), newDevice(b)
	v := newTestVerifier(b, ca, Config{})
	key := attestedKey(b, v, ca, d)
	assertion := d.Assertion(b, testAppID, 1, testClientData)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.VerifyAssertion(key, 0, assertion, testClientData); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyAttestation(b *testing.B) {
	ca, d := newTestCA(b), newDevice(b)
	v := newTestVerifier(b, ca, Config{})
	object := attest(b, ca, d, attestation{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.VerifyAttestation(testNow, object, d.ID, testChallenge); err != nil {
			b.Fatal(err)
		}
	}
}
