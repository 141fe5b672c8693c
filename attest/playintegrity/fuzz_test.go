package playintegrity

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// FuzzVerify feeds Verify any token: it never panics, every refusal is
// exactly one of ErrMalformed and ErrAttestation, and what passes is the
// genuine token's verdict (Go's base64 decoder ignores newlines and a last
// character's spare bits, so a few other spellings of it pass too).
//
//	go test -run '^$' -fuzz FuzzVerify -fuzztime 20s ./attest/playintegrity
func FuzzVerify(f *testing.F) {
	fx := newFixture(f)
	genuine := fx.token(f, nil)
	want, err := fx.v.Verify(genuine, standard, Policy{}, fx.now)
	if err != nil {
		f.Fatal(err)
	}
	jws := sign(f, jose.ES256, fx.signer, mustJSON(f, fx.verdict(0)))
	for _, seed := range []string{
		genuine,
		genuine[:len(genuine)/2],
		genuine[:strings.LastIndexByte(genuine, '.')+3],
		"", ".", "....", "a.b.c.d.e", "garbage",
		jws,
		encrypt(f, jose.DIRECT, jose.A256GCM, fx.aesKey, []byte(jws)),
		fx.seal(f, b64(`{"alg":"none"}`)+"."+b64("{}")+"."),
		fx.seal(f, "a.b.c"),
		b64(`{"alg":"A256KW","enc":"A256GCM","zip":"DEF"}`) + ".AA.AA.AA.AA",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		got, err := fx.v.Verify(token, standard, Policy{}, fx.now)
		if err == nil {
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q passed with %+v", token, got)
			}
			return
		}
		if errors.Is(err, ErrMalformed) == errors.Is(err, ErrAttestation) {
			t.Fatalf("%q: %v, want exactly one of ErrMalformed and ErrAttestation", token, err)
		}
	})
}

// FuzzSignedVerdict signs and seals any payload with the operator's own
// keys, as only Google could: the verdict parser and the policy never
// panic, refuse with ErrAttestation, and pass only a verdict that meets
// every check.
//
//	go test -run '^$' -fuzz FuzzSignedVerdict -fuzztime 20s ./attest/playintegrity
func FuzzSignedVerdict(f *testing.F) {
	fx := newFixture(f)
	f.Add(string(mustJSON(f, fx.verdict(time.Second))))
	f.Add(`{"requestDetails":{"requestPackageName":"com.example.shop","requestHash":"x","timestampMillis":1}}`)
	f.Add(`{"appIntegrity":null,"deviceIntegrity":{"deviceRecognitionVerdict":null}}`)
	f.Add(`[]`)
	f.Add(`{"requestDetails":{"timestampMillis":"-9223372036854775808"}}`)
	far := fx.verdict(0)
	section(far, "requestDetails")["timestampMillis"] = "9223372036854775807"
	f.Add(string(mustJSON(f, far)))
	f.Fuzz(func(t *testing.T, payload string) {
		token := fx.seal(t, sign(t, jose.ES256, fx.signer, []byte(payload)))
		got, err := fx.v.Verify(token, standard, Policy{}, fx.now)
		if err != nil {
			if !errors.Is(err, ErrAttestation) || errors.Is(err, ErrMalformed) {
				t.Fatalf("%q: %v, want ErrAttestation", payload, err)
			}
			return
		}
		age := fx.now.Sub(got.Issued)
		switch {
		case got.RequestHash != testRequestHash, got.RequestPackageName != testPackage, got.PackageName != testPackage:
			t.Fatalf("%q passed for another request: %+v", payload, got)
		case age > 2*time.Minute || age < -10*time.Second:
			t.Fatalf("%q passed issued %s ago", payload, age)
		case got.App != AppPlayRecognized, !slices.Contains(got.Device, MeetsDeviceIntegrity):
			t.Fatalf("%q passed the default policy with %+v", payload, got)
		}
	})
}
