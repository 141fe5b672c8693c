package playintegrity

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// refused checks that Verify refuses token with want (and only that of
// the two top sentinels) and returns a zero Verdict.
func refused(t *testing.T, f *fixture, token string, exp Expect, p Policy, want error) error {
	t.Helper()
	got, err := f.v.Verify(token, exp, p, f.now)
	t.Log(err)
	if !errors.Is(err, want) {
		t.Fatalf("Verify: %v, want %v", err, want)
	}
	other := ErrAttestation
	if want != ErrMalformed {
		other = ErrMalformed
	}
	if errors.Is(err, other) {
		t.Errorf("Verify: %v matches %v too", err, other)
	}
	if !reflect.DeepEqual(got, Verdict{}) {
		t.Errorf("Verify refused with a verdict: %+v", got)
	}
	return err
}

func TestGenuineTokenPasses(t *testing.T) {
	f := newFixture(t)
	got, err := f.v.Verify(f.token(t, nil), standard, Policy{}, f.now)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	want := Verdict{
		RequestPackageName: testPackage,
		RequestHash:        testRequestHash,
		Issued:             time.UnixMilli(f.now.Add(-5 * time.Second).UnixMilli()),
		App:                AppPlayRecognized,
		PackageName:        testPackage,
		CertificateDigests: []string{base64.RawURLEncoding.EncodeToString(testCert[:])},
		VersionCode:        42,
		Device:             []DeviceLabel{MeetsDeviceIntegrity},
		Licensing:          Licensed,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("verdict:\n got %+v\nwant %+v", got, want)
	}
}

// TestClassicNonce: a classic request's nonce matches as the same bytes,
// whatever base64 padding the app kept; int64s sent as bare numbers parse.
func TestClassicNonce(t *testing.T) {
	f := newFixture(t)
	for _, sent := range []string{testNonce, strings.TrimRight(testNonce, "=")} {
		token := f.token(t, func(v map[string]any) {
			rd := section(v, "requestDetails")
			delete(rd, "requestHash")
			rd["nonce"] = sent
			rd["timestampMillis"] = f.now.UnixMilli()
			section(v, "appIntegrity")["versionCode"] = 7
		})
		got, err := f.v.Verify(token, classic, Policy{}, f.now)
		if err != nil {
			t.Fatalf("nonce %q: %v", sent, err)
		}
		if got.Nonce != sent || got.VersionCode != 7 || !got.Issued.Equal(time.UnixMilli(f.now.UnixMilli())) {
			t.Errorf("nonce %q: verdict %+v", sent, got)
		}
	}
}

// TestForgedCryptoRefused: every way around the keys and the pinned
// algorithms answers ErrAttestation.
func TestForgedCryptoRefused(t *testing.T) {
	f := newFixture(t)
	genuine := mustJSON(t, f.verdict(time.Second))
	otherAES := make([]byte, 32)
	rand.Read(otherAES)
	otherEC, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, _ := x509.MarshalPKIXPublicKey(&f.signer.PublicKey)
	genuineJWS := sign(t, jose.ES256, f.signer, genuine)
	parts := strings.Split(genuineJWS, ".")
	otherPayload := mustJSON(t, f.verdict(0))

	cases := []struct {
		name  string
		token string
	}{
		{"wrong decryption key", encrypt(t, jose.A256KW, jose.A256GCM, otherAES, []byte(genuineJWS))},
		{"signed by another key", f.seal(t, sign(t, jose.ES256, otherEC, genuine))},
		{"signed by another key that embeds its JWK", f.seal(t, signWith(t, jose.ES256, otherEC, genuine, &jose.SignerOptions{EmbedJWK: true}))},
		{"HS256 keyed with the verification key's DER", f.seal(t, sign(t, jose.HS256, pubDER, genuine))},
		{"HS256 keyed with the verification key's base64", f.seal(t, sign(t, jose.HS256, []byte(f.pubB64), genuine))},
		{"JWS alg none", f.seal(t, b64(`{"alg":"none"}`)+"."+b64(string(genuine))+".")},
		{"JWS alg ES256 with no signature", f.seal(t, parts[0]+"."+parts[1]+".")},
		{"JWS alg ES384", f.seal(t, sign(t, jose.ES384, p384, genuine))},
		{"JWS alg RS256", f.seal(t, sign(t, jose.RS256, rsaKey, genuine))},
		{"JWS with crit b64 false", f.seal(t, signWith(t, jose.ES256, f.signer, genuine, (&jose.SignerOptions{}).WithBase64(false)))},
		{"JWS payload swapped under a genuine signature", f.seal(t, parts[0]+"."+b64(string(otherPayload))+"."+parts[2])},
		{"JWS signature bit flipped", f.seal(t, parts[0]+"."+parts[1]+"."+flip(parts[2]))},
		{"JWE alg dir", encrypt(t, jose.DIRECT, jose.A256GCM, f.aesKey, []byte(genuineJWS))},
		{"JWE enc A128GCM", encrypt(t, jose.A256KW, jose.A128GCM, f.aesKey, []byte(genuineJWS))},
		{"JWE enc A256CBC-HS512", encrypt(t, jose.A256KW, jose.A256CBC_HS512, f.aesKey, []byte(genuineJWS))},
		{"JWE alg A128KW", encrypt(t, jose.A128KW, jose.A256GCM, f.aesKey[:16], []byte(genuineJWS))},
		{"JWE alg RSA-OAEP-256", encrypt(t, jose.RSA_OAEP_256, jose.A256GCM, &rsaKey.PublicKey, []byte(genuineJWS))},
		{"JWE alg ECDH-ES+A256KW", encrypt(t, jose.ECDH_ES_A256KW, jose.A256GCM, &otherEC.PublicKey, []byte(genuineJWS))},
		{"JWE alg PBES2 with a huge count", b64(`{"alg":"PBES2-HS512+A256KW","enc":"A256GCM","p2c":2000000000,"p2s":"c2FsdHNhbHQ"}`) + ".AAAA.AAAA.AAAA.AAAA"},
		{"JWE zip DEF", encryptWith(t, jose.A256KW, jose.A256GCM, f.aesKey, []byte(genuineJWS), &jose.EncrypterOptions{Compression: jose.DEFLATE})},
		{"JWE with crit", encryptWith(t, jose.A256KW, jose.A256GCM, f.aesKey, []byte(genuineJWS), (&jose.EncrypterOptions{}).WithHeader("crit", []string{"exp"}).WithHeader("exp", 1))},
		{"JWE ciphertext bit flipped", flipPart(f.seal(t, genuineJWS), 3)},
		{"JWE tag bit flipped", flipPart(f.seal(t, genuineJWS), 4)},
		{"JWE wrapped key bit flipped", flipPart(f.seal(t, genuineJWS), 1)},
		{"JWE header edited (kid added)", rehead(f.seal(t, genuineJWS), `{"alg":"A256KW","enc":"A256GCM","kid":"x"}`)},
		{"unsigned verdict inside the JWE", f.seal(t, string(genuine))},
		{"a JWE inside the JWE", f.seal(t, f.seal(t, genuineJWS))},
		{"signed payload that is not JSON", f.seal(t, sign(t, jose.ES256, f.signer, []byte("not json")))},
		{"signed verdict without a timestamp", f.token(t, func(v map[string]any) { delete(section(v, "requestDetails"), "timestampMillis") })},
		{"signed verdict with a non-numeric timestamp", f.token(t, func(v map[string]any) { section(v, "requestDetails")["timestampMillis"] = "soon" })},
		{"signed verdict without an app verdict", f.token(t, func(v map[string]any) { delete(v, "appIntegrity") })},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			refused(t, f, c.token, standard, Policy{}, ErrAttestation)
		})
	}
}

// TestMalformedRefused: what does not parse as a compact JWE answers
// ErrMalformed; no input panics.
func TestMalformedRefused(t *testing.T) {
	f := newFixture(t)
	genuine := f.token(t, nil)
	jwe, err := jose.ParseEncryptedCompact(genuine, []jose.KeyAlgorithm{jose.A256KW}, []jose.ContentEncryption{jose.A256GCM})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		token string
	}{
		{"empty", ""},
		{"garbage", "garbage"},
		{"four dots", "...."},
		{"five empty-ish parts", "a.b.c.d.e"},
		{"a bare JWS", sign(t, jose.ES256, f.signer, mustJSON(t, f.verdict(0)))},
		{"the JWE's JSON serialization", jwe.FullSerialize()},
		{"one part too many", genuine + ".AAAA"},
		{"header not base64url", "eyJ!!!" + genuine[strings.IndexByte(genuine, '.'):]},
		{"header not a JSON object", rehead(genuine, `["A256KW"]`)},
		{"header null", rehead(genuine, `null`)},
		{"header alg a number", rehead(genuine, `{"alg":1,"enc":"A256GCM"}`)},
		{"header without alg", rehead(genuine, `{"enc":"A256GCM"}`)},
		{"too large", genuine + strings.Repeat("A", MaxTokenBytes)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			refused(t, f, c.token, standard, Policy{}, ErrMalformed)
		})
	}
}

// TestTruncatedRefused cuts the genuine token at every length: a cut
// before the fifth part is malformed; a cut in the last part is
// malformed or fails the tag check; none passes or panics.
func TestTruncatedRefused(t *testing.T) {
	f := newFixture(t)
	genuine := f.token(t, nil)
	for n := range len(genuine) {
		cut := genuine[:n]
		_, err := f.v.Verify(cut, standard, Policy{}, f.now)
		switch {
		case strings.Count(cut, ".") < 4 && !errors.Is(err, ErrMalformed):
			t.Fatalf("cut at %d: %v, want ErrMalformed", n, err)
		case !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrAttestation):
			t.Fatalf("cut at %d: %v, want ErrMalformed or ErrAttestation", n, err)
		}
	}
}

func TestRequestBindingRefused(t *testing.T) {
	f := newFixture(t)
	nonceToken := f.token(t, func(v map[string]any) {
		rd := section(v, "requestDetails")
		delete(rd, "requestHash")
		rd["nonce"] = testNonce
	})
	cases := []struct {
		name  string
		token string
		exp   Expect
	}{
		{"another request hash", f.token(t, nil), Expect{RequestHash: testRequestHash[:len(testRequestHash)-1] + "h"}},
		{"a prefix of the request hash", f.token(t, nil), Expect{RequestHash: testRequestHash[:10]}},
		{"another nonce", nonceToken, Expect{Nonce: "aGVsbG93b3JsZGhvd2FyZXlvdg=="}},
		{"a nonce token where a hash is expected", nonceToken, standard},
		{"a hash token where a nonce is expected", f.token(t, nil), classic},
		{"a token whose nonce is the expected hash", nonceToken, Expect{Nonce: testRequestHash}},
		{"another request package", f.token(t, func(v map[string]any) {
			section(v, "requestDetails")["requestPackageName"] = "com.example.reseller"
		}), standard},
		{"another app package", f.token(t, func(v map[string]any) {
			section(v, "appIntegrity")["packageName"] = "com.example.reseller"
		}), standard},
		{"no app package", f.token(t, func(v map[string]any) {
			delete(section(v, "appIntegrity"), "packageName")
		}), standard},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := refused(t, f, c.token, c.exp, Policy{}, ErrAttestation)
			if errors.Is(err, ErrStale) {
				t.Errorf("%v matches ErrStale", err)
			}
		})
	}
}

func TestFreshness(t *testing.T) {
	f := newFixture(t)
	at := func(age time.Duration) string {
		return f.token(t, func(v map[string]any) {
			section(v, "requestDetails")["timestampMillis"] = f.verdict(age)["requestDetails"].(map[string]any)["timestampMillis"]
		})
	}
	for _, age := range []time.Duration{0, 2 * time.Minute, -10 * time.Second} {
		if _, err := f.v.Verify(at(age), standard, Policy{}, f.now); err != nil {
			t.Errorf("issued %s ago: %v, want it to pass (default window)", age, err)
		}
	}
	for _, age := range []time.Duration{2*time.Minute + time.Millisecond, 24 * time.Hour} {
		err := refused(t, f, at(age), standard, Policy{}, ErrAttestation)
		if !errors.Is(err, ErrStale) {
			t.Errorf("issued %s ago: %v, want ErrStale", age, err)
		}
	}
	for _, age := range []time.Duration{-10*time.Second - time.Millisecond, -time.Hour} {
		err := refused(t, f, at(age), standard, Policy{}, ErrAttestation)
		if errors.Is(err, ErrStale) {
			t.Errorf("issued %s in the future: %v matches ErrStale", -age, err)
		}
	}

	// The furthest future an int64 of milliseconds holds: now minus it
	// does not fit a time.Duration.
	farFuture := f.token(t, func(v map[string]any) {
		section(v, "requestDetails")["timestampMillis"] = "9223372036854775807"
	})
	if err := refused(t, f, farFuture, standard, Policy{}, ErrAttestation); errors.Is(err, ErrStale) {
		t.Errorf("issued in year 292278994: %v matches ErrStale", err)
	}

	cfg := f.cfg
	cfg.MaxAge, cfg.MaxSkew = 30*time.Second, time.Second
	v, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(at(31*time.Second), standard, Policy{}, f.now); !errors.Is(err, ErrStale) {
		t.Errorf("MaxAge 30s, issued 31s ago: %v, want ErrStale", err)
	}
	if _, err := v.Verify(at(-2*time.Second), standard, Policy{}, f.now); !errors.Is(err, ErrAttestation) {
		t.Errorf("MaxSkew 1s, issued 2s ahead: %v, want ErrAttestation", err)
	}
}

// TestExpectMisuse: asking for neither or both bindings is the caller's
// bug, not a client's fault: no sentinel, so it is a 500.
// TestStaleIsAnAttestationFailure: a table that maps ErrAttestation maps
// ErrStale too, unless it has a row of its own first.
func TestStaleIsAnAttestationFailure(t *testing.T) {
	if !errors.Is(ErrStale, ErrAttestation) || errors.Is(ErrAttestation, ErrStale) || errors.Is(ErrStale, ErrMalformed) {
		t.Error("want ErrStale to be an ErrAttestation, and not the other way round")
	}
}

func TestExpectMisuse(t *testing.T) {
	f := newFixture(t)
	for _, exp := range []Expect{{}, {Nonce: testNonce, RequestHash: testRequestHash}} {
		_, err := f.v.Verify(f.token(t, nil), exp, Policy{}, f.now)
		if err == nil || errors.Is(err, ErrMalformed) || errors.Is(err, ErrAttestation) {
			t.Errorf("Expect %+v: %v, want a plain error", exp, err)
		}
	}
}

// flip changes the first character of a base64url string.
func flip(s string) string {
	if s[0] == 'A' {
		return "B" + s[1:]
	}
	return "A" + s[1:]
}

// flipPart flips the first character of the i-th part of a compact token.
func flipPart(token string, i int) string {
	parts := strings.Split(token, ".")
	parts[i] = flip(parts[i])
	return strings.Join(parts, ".")
}

// rehead replaces a compact token's protected header.
func rehead(token, header string) string {
	_, rest, _ := strings.Cut(token, ".")
	return b64(header) + "." + rest
}
