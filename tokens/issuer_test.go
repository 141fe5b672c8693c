package tokens

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func newTestIssuer(t testing.TB) (*Issuer, *KeySet) {
	t.Helper()
	keys := openTestKeys(t, t.TempDir())
	return NewIssuer(keys, IssuerConfig{}), keys
}

func TestIssuerDefaults(t *testing.T) {
	keys := openTestKeys(t, t.TempDir())
	for _, tc := range []struct {
		cfg              IssuerConfig
		wantIss, wantAud string
		wantLeeway       time.Duration
	}{
		{IssuerConfig{}, "anteroom", "anteroom-claim", 5 * time.Second},
		{IssuerConfig{Issuer: "https://q.shop", Audience: "claims", Leeway: time.Second}, "https://q.shop", "claims", time.Second},
		{IssuerConfig{Leeway: -1}, "anteroom", "anteroom-claim", 0},
	} {
		i := NewIssuer(keys, tc.cfg)
		if i.issuer != tc.wantIss || i.audience != tc.wantAud || i.leeway != tc.wantLeeway {
			t.Errorf("NewIssuer(%+v): got %q %q %v, want %q %q %v", tc.cfg,
				i.issuer, i.audience, i.leeway, tc.wantIss, tc.wantAud, tc.wantLeeway)
		}
	}
	if got := NewIssuer(keys, IssuerConfig{}).Algorithms(); len(got) != 1 || got[0] != "EdDSA" {
		t.Errorf("Algorithms: got %v, want [EdDSA]", got)
	}
}

func TestAdmissionRoundTrip(t *testing.T) {
	iss, keys := newTestIssuer(t)
	raw, a, err := iss.Issue("spring", "alice", 1234, 5*time.Minute, t0())
	if err != nil {
		t.Fatal(err)
	}
	sec := time.Unix(t0().Unix(), 0).UTC()
	want := Admission{
		Event: "spring", User: "alice", Pos: 1234, ID: a.ID,
		IssuedAt: sec, NotBefore: sec, ExpiresAt: sec.Add(5 * time.Minute),
	}
	if a != want {
		t.Errorf("Issue: got %+v, want %+v", a, want)
	}
	if id, err := unb64(a.ID); err != nil || len(id) != 16 {
		t.Errorf("jti %q: got %d bytes (%v), want 16", a.ID, len(id), err)
	}
	got, err := iss.Verify(raw, "spring", t0().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Verify: got %+v, want %+v", got, want)
	}
	tok, _, err := jwt.NewParser().ParseUnverified(raw, jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Header["kid"]; got != keys.Active() {
		t.Errorf("kid header: got %v, want %s", got, keys.Active())
	}
	_, b, _ := iss.Issue("spring", "alice", 1234, 5*time.Minute, t0())
	if b.ID == a.ID {
		t.Errorf("jti: got %s twice, want a fresh one per token", a.ID)
	}
}

func TestIssueRejects(t *testing.T) {
	iss, _ := newTestIssuer(t)
	for _, tc := range []struct {
		name, event, user string
		pos               int64
		ttl               time.Duration
	}{
		{"empty event", "", "u", 1, time.Minute},
		{"empty user", "e", "", 1, time.Minute},
		{"zero pos", "e", "u", 0, time.Minute},
		{"zero ttl", "e", "u", 1, 0},
		{"sub-second ttl", "e", "u", 1, time.Millisecond},
		{"invalid utf-8", "e", "\xc3\x28", 1, time.Minute},
		{"long user", "e", strings.Repeat("x", maxIDLen+1), 1, time.Minute},
	} {
		if raw, _, err := iss.Issue(tc.event, tc.user, tc.pos, tc.ttl, t0()); err == nil {
			t.Errorf("%s: got %q, want an error", tc.name, raw)
		}
	}
}

func TestAdmissionVerifyRejects(t *testing.T) {
	iss, keys := newTestIssuer(t)
	snap := keys.snap.Load()
	kid, signer := snap.active, snap.signer
	pub := signer.Public().(ed25519.PublicKey)
	now := t0()
	claims := jwt.MapClaims{
		"iss": "anteroom", "aud": "anteroom-claim", "sub": "alice", "event": "ev",
		"pos": 7, "jti": "abc", "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Minute).Unix(),
	}
	kidHdr := map[string]any{"kid": kid}
	ed := func(c jwt.MapClaims) string { return craft(t, jwt.SigningMethodEdDSA, signer, kidHdr, c) }
	_, otherEd, _ := ed25519.GenerateKey(rand.Reader)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	genuine, _, err := iss.Issue("ev", "alice", 7, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(genuine, ".")
	sig, _ := unb64(parts[2])
	sig[0] ^= 1
	at := func(d time.Duration) time.Time { return now.Add(d) }
	for _, tc := range []struct {
		name, raw, event string
		when             time.Time
		want             error
	}{
		{"genuine", genuine, "ev", now, nil},
		{"crafted with the key", ed(claims), "ev", now, nil},
		{"aud as array", ed(with(claims, "aud", []string{"x", "anteroom-claim"})), "ev", now, nil},
		{"another event", genuine, "other", now, ErrWrongEvent},
		{"bad signature", parts[0] + "." + parts[1] + "." + b64(sig), "ev", now, ErrInvalid},
		{"non-canonical signature encoding", sloppy(t, genuine), "ev", now, ErrInvalid},
		{"no signature", parts[0] + "." + parts[1] + ".", "ev", now, ErrInvalid},
		{"another Ed25519 key, same kid", craft(t, jwt.SigningMethodEdDSA, otherEd, kidHdr, claims), "ev", now, ErrInvalid},
		{"ES256, same kid", craft(t, jwt.SigningMethodES256, ecKey, kidHdr, claims), "ev", now, ErrInvalid},
		{"alg none", unsigned(`{"alg":"none","kid":"`+kid+`"}`, `{"iss":"anteroom","aud":"anteroom-claim","sub":"a","event":"ev","pos":1,"jti":"j","iat":1,"nbf":1,"exp":99999999999}`), "ev", now, ErrInvalid},
		{"HS256 keyed with the public key", craft(t, jwt.SigningMethodHS256, []byte(pub), kidHdr, claims), "ev", now, ErrInvalid},
		{"HS256 keyed with the public JWK x", craft(t, jwt.SigningMethodHS256, []byte(b64(pub)), kidHdr, claims), "ev", now, ErrInvalid},
		{"crit header", craft(t, jwt.SigningMethodEdDSA, signer, map[string]any{"kid": kid, "crit": []string{"exp"}}, claims), "ev", now, ErrInvalid},
		{"unknown kid", craft(t, jwt.SigningMethodEdDSA, signer, map[string]any{"kid": "nope"}, claims), "ev", now, ErrInvalid},
		{"no kid", craft(t, jwt.SigningMethodEdDSA, signer, nil, claims), "ev", now, ErrInvalid},
		{"kid not a string", craft(t, jwt.SigningMethodEdDSA, signer, map[string]any{"kid": 5}, claims), "ev", now, ErrInvalid},
		{"within exp leeway", genuine, "ev", at(time.Minute + 4*time.Second), nil},
		{"expired", genuine, "ev", at(time.Minute + 5*time.Second), ErrInvalid},
		{"long expired", genuine, "ev", at(time.Hour), ErrInvalid},
		{"nbf within leeway", genuine, "ev", at(-4 * time.Second), nil},
		{"nbf beyond leeway", genuine, "ev", at(-6 * time.Second), ErrInvalid},
		{"nbf in the future", ed(with(claims, "nbf", now.Add(time.Minute).Unix())), "ev", now, ErrInvalid},
		{"iat in the future", ed(with(claims, "iat", now.Add(time.Minute).Unix())), "ev", now, ErrInvalid},
		{"wrong aud", ed(with(claims, "aud", "someone-else")), "ev", now, ErrInvalid},
		{"wrong iss", ed(with(claims, "iss", "mallory")), "ev", now, ErrInvalid},
		{"missing iss", ed(without(claims, "iss")), "ev", now, ErrInvalid},
		{"missing aud", ed(without(claims, "aud")), "ev", now, ErrInvalid},
		{"empty aud", ed(with(claims, "aud", []string{})), "ev", now, ErrInvalid},
		{"missing sub", ed(without(claims, "sub")), "ev", now, ErrInvalid},
		{"missing event", ed(without(claims, "event")), "", now, ErrInvalid},
		{"missing pos", ed(without(claims, "pos")), "ev", now, ErrInvalid},
		{"zero pos", ed(with(claims, "pos", 0)), "ev", now, ErrInvalid},
		{"fractional pos", ed(with(claims, "pos", 1.5)), "ev", now, ErrInvalid},
		{"missing jti", ed(without(claims, "jti")), "ev", now, ErrInvalid},
		{"missing iat", ed(without(claims, "iat")), "ev", now, ErrInvalid},
		{"missing nbf", ed(without(claims, "nbf")), "ev", now, ErrInvalid},
		{"missing exp", ed(without(claims, "exp")), "ev", now, ErrInvalid},
		{"exp not a number", ed(with(claims, "exp", "tomorrow")), "ev", now, ErrInvalid},
		{"oversized", ed(with(claims, "pad", strings.Repeat("p", maxTokenLen))), "ev", now, ErrInvalid},
		{"empty", "", "ev", now, ErrInvalid},
		{"dot", ".", "ev", now, ErrInvalid},
		{"a.b.c", "a.b.c", "ev", now, ErrInvalid},
		{"random bytes", randomBytes(t, 500), "ev", now, ErrInvalid},
	} {
		got, err := iss.Verify(tc.raw, tc.event, tc.when)
		if err != nil && got != (Admission{}) {
			t.Errorf("%s: got %+v with error, want zero Admission", tc.name, got)
		}
		t.Run(tc.name, func(t *testing.T) { checkErr(t, err, tc.want) })
	}
}

func TestAdmissionOtherIssuerConfig(t *testing.T) {
	keys := openTestKeys(t, t.TempDir())
	a := NewIssuer(keys, IssuerConfig{Issuer: "A", Audience: "claims-a"})
	b := NewIssuer(keys, IssuerConfig{Issuer: "B", Audience: "claims-a"})
	c := NewIssuer(keys, IssuerConfig{Issuer: "A", Audience: "claims-c"})
	raw, _, err := a.Issue("ev", "u", 1, time.Minute, t0())
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]*Issuer{"same config": a, "other iss": b, "other aud": c} {
		_, err := v.Verify(raw, "ev", t0())
		if got, want := err == nil, name == "same config"; got != want {
			t.Errorf("%s: got ok=%v (err %v), want ok=%v", name, got, err, want)
		}
	}
}

// TestIssueAsGolangJWT: Issue's token is byte for byte the one golang-jwt
// signs for the same header and claims with the active key (Issue signs
// with curve25519-voi, which gives crypto/ed25519's deterministic
// signature).
func TestIssueAsGolangJWT(t *testing.T) {
	iss, keys := newTestIssuer(t)
	snap := keys.snap.Load()
	for i, user := range []string{"alice", "bob <&> \u00e9", strings.Repeat("u", 256)} {
		raw, a, err := iss.Issue("spring-drop", user, int64(1+i*1000), time.Duration(i+1)*time.Minute, t0())
		if err != nil {
			t.Fatal(err)
		}
		tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, admissionClaims{
			RegisteredClaims: jwt.RegisteredClaims{
				Issuer: iss.issuer, Subject: a.User, Audience: jwt.ClaimStrings{iss.audience},
				ExpiresAt: jwt.NewNumericDate(a.ExpiresAt), NotBefore: jwt.NewNumericDate(a.NotBefore),
				IssuedAt: jwt.NewNumericDate(a.IssuedAt), ID: a.ID,
			},
			Event: a.Event, Pos: &a.Pos,
		})
		tok.Header["kid"] = snap.active
		want, err := tok.SignedString(snap.signer)
		if err != nil {
			t.Fatal(err)
		}
		if raw != want {
			t.Errorf("user %q: Issue gave\n%s\ngolang-jwt gives\n%s", user, raw, want)
		}
	}
}
