package tokens

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// fastPair returns an issuer with the fast path and one without (a gateway,
// or a node of another deployment) on the same key set.
func fastPair(t *testing.T) (*Issuer, *Issuer, *KeySet) {
	t.Helper()
	keys := openTestKeys(t, t.TempDir())
	return NewIssuer(keys, IssuerConfig{MACKey: AdmissionMACKey(testSecret(7))}), NewIssuer(keys, IssuerConfig{}), keys
}

// resign replaces the header of raw, keeping its payload and signature.
func reheader(t *testing.T, raw string, edit func(map[string]any)) string {
	t.Helper()
	parts := strings.Split(raw, ".")
	hb, err := unb64(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(hb, &h); err != nil {
		t.Fatal(err)
	}
	edit(h)
	nb, _ := json.Marshal(h)
	return b64(nb) + "." + parts[1] + "." + parts[2]
}

func TestFastPath(t *testing.T) {
	fast, plain, keys := fastPair(t)
	raw, _, err := fast.Issue("ev", "alice", 7, 5*time.Minute, t0())
	if err != nil {
		t.Fatal(err)
	}
	if hdr, err := unb64(strings.Split(raw, ".")[0]); err != nil || !strings.Contains(string(hdr), `"amac"`) {
		t.Fatalf("token from a MAC issuer has no amac header")
	}
	now := t0().Add(time.Minute)
	for name, iss := range map[string]*Issuer{"fast": fast, "plain (gateway)": plain} {
		if a, err := iss.Verify(raw, "ev", now); err != nil || a.User != "alice" || a.Pos != 7 {
			t.Errorf("%s: got %+v, %v", name, a, err)
		}
	}
	parts := strings.Split(raw, ".")
	badSig := parts[0] + "." + parts[1] + "." + b64(make([]byte, 64))
	// A node accepts its own MAC without the signature; nobody else does.
	if _, err := fast.Verify(badSig, "ev", now); err != nil {
		t.Errorf("fast path with a valid amac: %v", err)
	}
	if _, err := plain.Verify(badSig, "ev", now); err == nil {
		t.Errorf("a gateway accepted a token with a bad signature")
	}

	// Everything but the signature is still checked on the fast path.
	cases := map[string]struct {
		raw   string
		event string
		at    time.Time
		want  error
	}{
		"expired":       {raw, "ev", t0().Add(time.Hour), ErrInvalid},
		"not yet valid": {raw, "ev", t0().Add(-time.Hour), ErrInvalid},
		"other event":   {raw, "other", now, ErrWrongEvent},
		"alg changed":   {reheader(t, raw, func(h map[string]any) { h["alg"] = "none" }), "ev", now, ErrInvalid},
		"crit added":    {reheader(t, raw, func(h map[string]any) { h["crit"] = []string{"exp"} }), "ev", now, ErrInvalid},
		"amac forged":   {reheader(t, raw, func(h map[string]any) { h["amac"] = b64(make([]byte, 16)) }), "ev", now, ErrInvalid},
		"payload swapped": {parts[0] + "." + b64([]byte(`{"iss":"anteroom","sub":"mallory","aud":["anteroom-claim"],"exp":9999999999,"nbf":1,"iat":1,"jti":"x","event":"ev","pos":1}`)) + "." + parts[2],
			"ev", now, ErrInvalid},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := fast.Verify(tc.raw, tc.event, tc.at)
			checkErr(t, err, tc.want)
		})
	}

	// Retiring the key ends the fast path too.
	if _, err := keys.Rotate(t0()); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Retire(t0().Add(time.Hour), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	_, err = fast.Verify(raw, "ev", now)
	checkErr(t, err, ErrInvalid)
}

func BenchmarkAdmissionVerifyFast(b *testing.B) {
	keys, err := OpenKeyDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	fast := NewIssuer(keys, IssuerConfig{MACKey: AdmissionMACKey(testSecret(7))})
	now := time.Now()
	raw, _, err := fast.Issue("ev", "alice", 7, 5*time.Minute, now)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fast.Verify(raw, "ev", now); err != nil {
			b.Fatal(err)
		}
	}
}
