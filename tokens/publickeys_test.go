package tokens

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// sameAsIssuer fails t unless keys (parsed from iss's JWKS) and iss give
// raw the same verdict.
func sameAsIssuer(t *testing.T, iss *Issuer, keys *AdmissionKeys, raw, event string, now time.Time) {
	t.Helper()
	want, werr := iss.Verify(raw, event, now)
	got, gerr := keys.Verify(raw, event, now)
	if got != want || errors.Is(gerr, ErrInvalid) != errors.Is(werr, ErrInvalid) || errors.Is(gerr, ErrWrongEvent) != errors.Is(werr, ErrWrongEvent) || (gerr == nil) != (werr == nil) {
		t.Fatalf("%q: AdmissionKeys %+v %v, Issuer %+v %v", raw, got, gerr, want, werr)
	}
}

func TestAdmissionKeysAgreeWithIssuer(t *testing.T) {
	iss, ks := newTestIssuer(t)
	keys, err := ParseAdmissionKeys(ks.JWKS(), IssuerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if !keys.Has(ks.Active()) || len(keys.Kids()) != 1 {
		t.Fatalf("kids %v, want the active %s", keys.Kids(), ks.Active())
	}
	now := t0()
	genuine, _, err := iss.Issue("ev", "alice", 7, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := keys.Verify(genuine, "ev", now); err != nil || a.User != "alice" || a.Pos != 7 {
		t.Fatalf("genuine: %+v %v", a, err)
	}
	for _, raw := range append(garbageSeeds(), genuine, sloppy(t, genuine), genuine+"x", strings.Replace(genuine, ".", "..", 1)) {
		for _, when := range []time.Duration{-time.Hour, -6 * time.Second, 0, time.Minute + 4*time.Second, time.Minute + 5*time.Second} {
			sameAsIssuer(t, iss, keys, raw, "ev", now.Add(when))
			sameAsIssuer(t, iss, keys, raw, "other", now.Add(when))
		}
	}

	// Rotated: a JWKS from before does not know the new key; one from
	// after knows both.
	if _, err := ks.Rotate(now); err != nil {
		t.Fatal(err)
	}
	fresh, _, err := iss.Issue("ev", "bob", 8, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Verify(fresh, "ev", now); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "unknown kid") {
		t.Errorf("a token of a key rotated in after the JWKS was read: %v, want unknown kid", err)
	}
	after, err := ParseAdmissionKeys(ks.JWKS(), IssuerConfig{})
	if err != nil || len(after.Kids()) != 2 {
		t.Fatalf("after the rotation: %v %v", after, err)
	}
	sameAsIssuer(t, iss, after, fresh, "ev", now)
	sameAsIssuer(t, iss, after, genuine, "ev", now)

	other, err := ParseAdmissionKeys(ks.JWKS(), IssuerConfig{Issuer: "https://q.example", Audience: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Verify(genuine, "ev", now); !errors.Is(err, ErrInvalid) {
		t.Errorf("another iss and aud configured: %v, want ErrInvalid", err)
	}
}

func TestParseAdmissionKeysRejects(t *testing.T) {
	_, ks := newTestIssuer(t)
	jwks := string(ks.JWKS())
	for name, in := range map[string]string{
		"empty":           ``,
		"not JSON":        `keys`,
		"no keys":         `{"keys":[]}`,
		"private key":     strings.Replace(jwks, `"kty":"OKP"`, `"kty":"OKP","d":"AAAA"`, 1),
		"no kid":          strings.Replace(jwks, `"kid":"`+ks.Active()+`",`, ``, 1),
		"encryption only": strings.Replace(jwks, `"use":"sig"`, `"use":"enc"`, 1),
		"duplicate kid":   strings.Replace(jwks, `]}`, `,`+jwks[len(`{"keys":[`):len(jwks)-2]+`]}`, 1),
		"short key":       strings.Replace(jwks, `"x":"`, `"x":"AAAA`, 1),
	} {
		if k, err := ParseAdmissionKeys([]byte(in), IssuerConfig{}); err == nil {
			t.Errorf("%s: accepted %q: %v", name, in, k.Kids())
		}
	}
}

// FuzzAdmissionKeysEquivalent holds AdmissionKeys to Issuer.Verify on
// arbitrary strings, seeded with genuine tokens and their mutations.
func FuzzAdmissionKeysEquivalent(f *testing.F) {
	ks := openTestKeys(f, f.TempDir())
	iss := NewIssuer(ks, IssuerConfig{})
	keys, err := ParseAdmissionKeys(ks.JWKS(), IssuerConfig{})
	if err != nil {
		f.Fatal(err)
	}
	raw, _, err := iss.Issue("ev", "alice", 7, 5*time.Minute, t0())
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range append(garbageSeeds(), raw, raw+".", sloppy(f, raw)) {
		f.Add(s)
	}
	now := t0().Add(time.Minute)
	f.Fuzz(func(t *testing.T, s string) { sameAsIssuer(t, iss, keys, s, "ev", now) })
}
