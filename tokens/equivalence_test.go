package tokens

import (
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oasisprotocol/curve25519-voi/curve"
	"github.com/oasisprotocol/curve25519-voi/curve/scalar"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// verifyReference is Verify written the plain way, as a gateway would:
// golang-jwt's parser (alg pinned to EdDSA, strict base64url, all claims
// required and checked) and crypto/ed25519 with the set's public key for
// the token's kid. Verify must agree with it on every input, but for one
// kind no one without the private key can make: a signature by the key with
// another nonce, which a node refuses (TestResignRefusesOtherNonces).
func (i *Issuer) verifyReference(raw, event string, now time.Time) (Admission, error) {
	if len(raw) > maxTokenLen {
		return Admission{}, invalid("too long")
	}
	snap := i.keys.snap.Load()
	parser := jwt.NewParser(
		jwt.WithValidMethods(i.Algorithms()), jwt.WithStrictDecoding(),
		jwt.WithIssuer(i.issuer), jwt.WithAudience(i.audience),
		jwt.WithExpirationRequired(), jwt.WithNotBeforeRequired(), jwt.WithIssuedAt(),
		jwt.WithLeeway(i.leeway), jwt.WithTimeFunc(func() time.Time { return now }),
	)
	var c admissionClaims
	_, err := parser.ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) {
		if _, ok := t.Header["crit"]; ok {
			return nil, errors.New("crit header not supported")
		}
		kid, _ := t.Header["kid"].(string)
		pub, ok := snap.pubs[kid]
		if !ok {
			return nil, fmt.Errorf("unknown kid %q", kid)
		}
		return pub, nil
	})
	if err != nil {
		return Admission{}, invalid(err)
	}
	return i.admissionOf(&c, event)
}

// sameVerdict fails t unless Verify and verifyReference agree on raw: both
// accept with the same admission, or both refuse with the same sentinel.
func sameVerdict(t *testing.T, iss *Issuer, raw string, now time.Time) {
	t.Helper()
	got, gerr := iss.Verify(raw, "ev", now)
	want, werr := iss.verifyReference(raw, "ev", now)
	switch {
	case (gerr == nil) != (werr == nil),
		errors.Is(gerr, ErrInvalid) != errors.Is(werr, ErrInvalid),
		errors.Is(gerr, ErrWrongEvent) != errors.Is(werr, ErrWrongEvent),
		got != want:
		t.Fatalf("token %q:\nVerify:    %+v, %v\nreference: %+v, %v", raw, got, gerr, want, werr)
	}
}

// signRaw signs header and payload JSON as given (no re-encoding) with
// priv, then spoils the signature as mode says.
func signRaw(priv ed25519.PrivateKey, header, payload []byte, mode byte) string {
	input := b64(header) + "." + b64(payload)
	sig := ed25519.Sign(priv, []byte(input))
	switch mode % 6 {
	case 1:
		sig[int(mode)%len(sig)] ^= 1 << (mode % 8)
	case 2:
		sig = nil
	case 3:
		sig = make([]byte, ed25519.SignatureSize)
	case 4:
		sig = nonCanonicalS(sig)
	case 5:
		sig = sig[:63]
	}
	return input + "." + b64(sig)
}

// FuzzAdmissionVerifyEquivalent signs arbitrary header and payload JSON
// with the active key (so that claim checks are reached) and compares
// Verify with verifyReference, with the genuine signature and spoiled
// ones.
func FuzzAdmissionVerifyEquivalent(f *testing.F) {
	keys := openTestKeys(f, f.TempDir())
	iss := NewIssuer(keys, IssuerConfig{})
	kid := keys.Active()
	priv := keys.snap.Load().signer
	now := t0().Add(time.Minute)
	good := fmt.Sprintf(`{"iss":"anteroom","sub":"alice","aud":["anteroom-claim"],"exp":%d,"nbf":%d,"iat":%d,"jti":"j","event":"ev","pos":3}`,
		now.Add(time.Hour).Unix(), now.Unix(), now.Unix())
	hdr := `{"alg":"EdDSA","kid":"` + kid + `","typ":"JWT"}`
	for _, h := range []string{
		hdr, `{"kid":"` + kid + `","alg":"EdDSA"}`, `{"alg":"EdDSA","kid":"` + kid + `","crit":[]}`,
		`{"ALG":"EdDSA","kid":"` + kid + `"}`, `{"alg":"none","alg":"EdDSA","kid":"` + kid + `"}`,
		`{"alg":"EdDSA","alg":"none","kid":"` + kid + `"}`, `{"alg":"EdDSA","KID":"` + kid + `"}`,
		`{"alg":"EdDSA","kid":"nope"}`, `{"alg":"HS256","kid":"` + kid + `"}`, `null`, `[]`, `{"alg":"EdDSA","kid":5}`,
		`{"alg":"EdDSA","kid":"` + kid + `","amac":"AAAA"}`, ` {"alg":"EdDSA","kid":"` + kid + `"} `,
	} {
		for _, p := range []string{
			good, strings.Replace(good, `"pos":3`, `"pos":0`, 1), strings.Replace(good, `"pos":3`, `"pos":1.5`, 1),
			strings.Replace(good, `"event":"ev"`, `"event":"other"`, 1), strings.Replace(good, `"iss"`, `"ISS"`, 1),
			strings.Replace(good, `"aud":["anteroom-claim"]`, `"aud":"anteroom-claim"`, 1),
			strings.Replace(good, `"sub":"alice"`, `"sub":"alice","sub":""`, 1),
			strings.Replace(good, `"exp"`, `"EXP"`, 1), `null`, `{}`, `[]`, good + `x`,
		} {
			f.Add([]byte(h), []byte(p), byte(0))
		}
	}
	f.Add([]byte(hdr), []byte(good), byte(1))
	f.Add([]byte(hdr), []byte(good), byte(4))
	f.Fuzz(func(t *testing.T, header, payload []byte, mode byte) {
		sameVerdict(t, iss, signRaw(priv, header, payload, mode), now)
	})
}

// FuzzAdmissionVerifyEquivalentRaw compares Verify with verifyReference
// on arbitrary strings, seeded with genuine tokens and their mutations.
func FuzzAdmissionVerifyEquivalentRaw(f *testing.F) {
	keys := openTestKeys(f, f.TempDir())
	iss := NewIssuer(keys, IssuerConfig{})
	raw, _, err := iss.Issue("ev", "alice", 7, 5*time.Minute, t0())
	if err != nil {
		f.Fatal(err)
	}
	dot := strings.LastIndexByte(raw, '.')
	for _, s := range append(garbageSeeds(), raw, raw[:dot+1], raw[:dot], raw+".", raw+"=", "."+raw,
		strings.Replace(raw, ".", ".\n", 1), raw[:dot+1]+"\r\n"+raw[dot+1:], sloppy(f, raw)) {
		f.Add(s)
	}
	now := t0().Add(time.Minute)
	f.Fuzz(func(t *testing.T, s string) { sameVerdict(t, iss, s, now) })
}

// TestAdmissionVerifyEquivalentOverTime compares the two on genuine tokens
// around their nbf and exp, and after the key that signed them is retired.
func TestAdmissionVerifyEquivalentOverTime(t *testing.T) {
	keys := openTestKeys(t, t.TempDir())
	iss := NewIssuer(keys, IssuerConfig{})
	raw, _, err := iss.Issue("ev", "alice", 7, time.Minute, t0())
	if err != nil {
		t.Fatal(err)
	}
	for s := -20; s <= 80; s++ {
		sameVerdict(t, iss, raw, t0().Add(time.Duration(s)*time.Second))
	}
	if _, err := keys.Rotate(t0()); err != nil {
		t.Fatal(err)
	}
	sameVerdict(t, iss, raw, t0())
	if _, err := keys.Retire(t0().Add(time.Hour), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	sameVerdict(t, iss, raw, t0())
	if _, err := iss.Verify(raw, "ev", t0()); !errors.Is(err, ErrInvalid) {
		t.Fatalf("token of a retired key: %v, want ErrInvalid", err)
	}
}

// nonCanonicalS returns sig with S replaced by S + L: the same scalar,
// another encoding, which crypto/ed25519 refuses.
func nonCanonicalS(sig []byte) []byte {
	l, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
	s := new(big.Int).SetBytes(reversed(sig[32:]))
	s.Add(s, l)
	be := s.FillBytes(make([]byte, 32))
	return append(slices.Clone(sig[:32]), reversed(be)...)
}

func reversed(b []byte) []byte {
	out := slices.Clone(b)
	slices.Reverse(out)
	return out
}

// TestEd25519StdlibSemantics checks that the signature check Verify uses
// (curve25519-voi with VerifyOptionsStdLib and an expanded key) accepts and
// refuses like crypto/ed25519.Verify on the signatures where Ed25519
// implementations differ: R offset by a small-order point (valid only
// under the cofactored equation), S not reduced, R not canonical, and
// random corruptions.
func TestEd25519StdlibSemantics(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	x, err := voi.NewExpandedPublicKey(voi.PublicKey(pub))
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("header.payload")
	genuine := ed25519.Sign(priv, msg)
	cofactored := smallOrderR(t, priv, msg)
	if !voi.VerifyExpanded(x, msg, cofactored) {
		t.Fatal("the small-order R case does not distinguish cofactored from cofactorless verification")
	}
	nonCanonR := slices.Clone(genuine)
	copy(nonCanonR, []byte{0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}) // y = p
	sigs := map[string][]byte{
		"genuine": genuine, "R + small-order point": cofactored, "S + L": nonCanonicalS(genuine),
		"R not canonical": nonCanonR, "empty": nil, "short": genuine[:63], "long": append(slices.Clone(genuine), 0),
	}
	for i := range 512 {
		s := slices.Clone(genuine)
		s[i/8] ^= 1 << (i % 8)
		sigs[fmt.Sprint("bit ", i)] = s
	}
	for name, sig := range sigs {
		want := ed25519.Verify(pub, msg, sig)
		if got := voi.VerifyExpandedWithOptions(x, msg, sig, stdlibVerify); got != want {
			t.Errorf("%s: voi %v, crypto/ed25519 %v", name, got, want)
		}
	}
	if !ed25519.Verify(pub, msg, genuine) || ed25519.Verify(pub, msg, cofactored) {
		t.Fatal("crypto/ed25519 does not behave as this test assumes")
	}
}

// smallOrderR signs msg with R' = rB + T, T of order 2, and S = r + kA for
// k = H(R' || A || msg): valid under [8]SB = [8]R' + [8]kA, not under
// SB = R' + kA.
func smallOrderR(t *testing.T, priv ed25519.PrivateKey, msg []byte) []byte {
	t.Helper()
	return signWithNonce(t, priv, msg, "nonce", true)
}

// signWithNonce signs msg with priv as RFC 8032 does but with the nonce r
// drawn from nonce instead of from the key and msg, with R offset by a
// point of order 2 when smallOrder is set. Without the offset the
// signature is valid (crypto/ed25519.Verify accepts it) but not the one
// signing msg with priv gives.
func signWithNonce(t *testing.T, priv ed25519.PrivateKey, msg []byte, nonce string, smallOrder bool) []byte {
	t.Helper()
	h := sha512.Sum512(priv.Seed())
	h[0] &= 248
	h[31] &= 127
	h[31] |= 64
	a, err := scalar.NewFromBytesModOrder(h[:32])
	if err != nil {
		t.Fatal(err)
	}
	rw := sha512.Sum512([]byte(nonce))
	r, err := scalar.NewFromBytesModOrderWide(rw[:])
	if err != nil {
		t.Fatal(err)
	}
	var R, T curve.EdwardsPoint
	R.MulBasepoint(curve.ED25519_BASEPOINT_TABLE, r)
	if smallOrder {
		var tc curve.CompressedEdwardsY
		order2, _ := hex.DecodeString("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f") // (0, -1)
		if _, err := tc.SetBytes(order2); err != nil {
			t.Fatal(err)
		}
		if _, err := T.SetCompressedY(&tc); err != nil {
			t.Fatal(err)
		}
		R.Add(&R, &T)
	}
	var rc curve.CompressedEdwardsY
	rc.SetEdwardsPoint(&R)
	pub := priv.Public().(ed25519.PublicKey)
	kh := sha512.New()
	kh.Write(rc[:])
	kh.Write(pub)
	kh.Write(msg)
	k, err := scalar.NewFromBytesModOrderWide(kh.Sum(nil))
	if err != nil {
		t.Fatal(err)
	}
	var s scalar.Scalar
	s.Mul(k, a)
	s.Add(&s, r)
	sig := make([]byte, 64)
	copy(sig, rc[:])
	if err := s.ToBytes(sig[32:]); err != nil {
		t.Fatal(err)
	}
	return sig
}

// TestResignRefusesOtherNonces: a node checks a token's signature by
// signing again (tokens/verify.go), so the signature Issue wrote passes and
// one made with the same key and another nonce — valid Ed25519, which only
// a holder of the private key can make — is refused, while a gateway's
// check with the public key (AdmissionKeys, crypto/ed25519) accepts it.
// It also pins what the check rests on: curve25519-voi's Sign gives
// crypto/ed25519's signature, byte for byte.
func TestResignRefusesOtherNonces(t *testing.T) {
	iss, keys := newTestIssuer(t)
	snap := keys.snap.Load()
	raw, _, err := iss.Issue("ev", "alice", 7, time.Minute, t0())
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParseAdmissionKeys(keys.JWKS(), IssuerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := iss.Verify(raw, "ev", t0()); err != nil {
		t.Fatalf("the issued token: %v", err)
	}
	dot := strings.LastIndexByte(raw, '.')
	msg := []byte(raw[:dot])
	other := signWithNonce(t, snap.signer, msg, "another nonce", false)
	if !ed25519.Verify(snap.pubs[snap.active], msg, other) {
		t.Fatal("the other nonce's signature is not valid Ed25519")
	}
	forged := raw[:dot+1] + b64(other)
	if _, err := iss.Verify(forged, "ev", t0()); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a node's Verify of a signature with another nonce: %v, want ErrInvalid", err)
	}
	if _, err := pub.Verify(forged, "ev", t0()); err != nil {
		t.Fatalf("AdmissionKeys (public key, crypto/ed25519 semantics) refused it: %v", err)
	}
	for i := range 64 {
		_, priv, err := ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		m := []byte(strings.Repeat(fmt.Sprint(i), i*7))
		if !slices.Equal(ed25519.Sign(priv, m), voi.Sign(voi.PrivateKey(priv), m)) {
			t.Fatalf("message %d: curve25519-voi and crypto/ed25519 sign differently", i)
		}
	}
}
