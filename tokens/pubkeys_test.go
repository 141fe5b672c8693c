package tokens

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestParsePublicKeys(t *testing.T) {
	shop := newShopKeys(t)
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	ecBytes, _ := shop.ec.PublicKey.Bytes() // 0x04 || x || y
	x, y := b64(ecBytes[1:33]), b64(ecBytes[33:])
	n, e := b64(shop.rsa.N.Bytes()), b64(big.NewInt(int64(shop.rsa.E)).Bytes())
	edX := b64(shop.ed.Public().(ed25519.PublicKey))
	rsaJWK := fmt.Sprintf(`{"kty":"RSA","kid":"r","n":%q,"e":%q}`, n, e)
	ecJWK := fmt.Sprintf(`{"kty":"EC","crv":"P-256","kid":"e","x":%q,"y":%q}`, x, y)
	edJWK := fmt.Sprintf(`{"kty":"OKP","crv":"Ed25519","kid":"d","x":%q}`, edX)
	set := func(keys ...string) string { return `{"keys":[` + strings.Join(keys, ",") + `]}` }
	pemOf := func(typ string, der []byte) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	}
	pubPEM := func(k any) string {
		der, err := x509.MarshalPKIXPublicKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pemOf("PUBLIC KEY", der)
	}
	ecPriv, _ := x509.MarshalECPrivateKey(shop.ec)
	p384Bytes, _ := p384.PublicKey.Bytes()

	for _, tc := range []struct {
		name     string
		input    string
		wantAlgs string // comma-separated algorithms of the keys, "" for an error
	}{
		{"three kinds", set(rsaJWK, ecJWK, edJWK), "RS256,ES256,EdDSA"},
		{"single JWK", ecJWK, "ES256"},
		{"surrounding space", "\n  " + set(edJWK) + "\n", "EdDSA"},
		{"alg Ed25519 (RFC 9864)", set(strings.Replace(edJWK, `"kid"`, `"alg":"Ed25519","kid"`, 1)), "EdDSA"},
		{"enc key skipped", set(strings.Replace(rsaJWK, `"kid"`, `"use":"enc","kid"`, 1), ecJWK), "ES256"},
		{"key_ops without verify skipped", set(strings.Replace(rsaJWK, `"kid"`, `"key_ops":["encrypt"],"kid"`, 1), ecJWK), "ES256"},
		{"PS256 key skipped", set(strings.Replace(rsaJWK, `"kid"`, `"alg":"PS256","kid"`, 1), ecJWK), "ES256"},
		{"P-384 skipped", set(fmt.Sprintf(`{"kty":"EC","crv":"P-384","x":%q,"y":%q}`, b64(p384Bytes[1:49]), b64(p384Bytes[49:])), edJWK), "EdDSA"},
		{"unknown kty skipped", set(`{"kty":"XYZ"}`, edJWK), "EdDSA"},
		{"only skipped keys", set(`{"kty":"XYZ"}`), ""},
		{"no keys", `{"keys":[]}`, ""},
		{"keys null", `{"keys":null}`, ""},
		{"alg contradicts key", set(strings.Replace(ecJWK, `"kid"`, `"alg":"RS256","kid"`, 1)), ""},
		{"private RSA member d", set(strings.Replace(rsaJWK, `"kid"`, `"d":"AQAB","kid"`, 1)), ""},
		{"symmetric oct key", set(`{"kty":"oct","k":"c2VjcmV0"}`, edJWK), ""},
		{"RSA 1024 bits", set(fmt.Sprintf(`{"kty":"RSA","n":%q,"e":"AQAB"}`, b64(small.N.Bytes()))), ""},
		{"RSA even exponent", set(fmt.Sprintf(`{"kty":"RSA","n":%q,"e":"Ag"}`, n)), ""},
		{"RSA huge exponent", set(fmt.Sprintf(`{"kty":"RSA","n":%q,"e":"AQABAQAB"}`, n)), ""},
		{"RSA padded base64", set(fmt.Sprintf(`{"kty":"RSA","n":%q,"e":"AQAB="}`, n)), ""},
		{"EC point off the curve", set(fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, x, x)), ""},
		{"EC short x", set(fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":"AQAB","y":%q}`, y)), ""},
		{"Ed25519 short x", set(`{"kty":"OKP","crv":"Ed25519","x":"AQAB"}`), ""},
		{"not JSON", `{"keys":[`, ""},
		{"keys not an array", `{"keys":{}}`, ""},
		{"PEM public keys", pubPEM(&shop.rsa.PublicKey) + pubPEM(&shop.ec.PublicKey) + pubPEM(shop.ed.Public()), "RS256,ES256,EdDSA"},
		{"PEM PKCS#1 RSA", pemOf("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&shop.rsa.PublicKey)), "RS256"},
		{"PEM certificate", selfSigned(t, shop.ec), "ES256"},
		{"PEM private key", pemOf("EC PRIVATE KEY", ecPriv), ""},
		{"PEM P-384", pubPEM(&p384.PublicKey), ""},
		{"PEM small RSA", pubPEM(&small.PublicKey), ""},
		{"PEM broken", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", ""},
		{"PEM header only", "-----BEGIN PUBLIC KEY-----", ""},
		{"neither", "hello", ""},
		{"empty", "", ""},
	} {
		keys, err := parsePublicKeys([]byte(tc.input))
		var algs []string
		for _, k := range keys {
			algs = append(algs, k.alg)
		}
		got := strings.Join(algs, ",")
		if tc.wantAlgs == "" && err == nil {
			t.Errorf("%s: got keys %q, want an error", tc.name, got)
		}
		if tc.wantAlgs != "" && (err != nil || got != tc.wantAlgs) {
			t.Errorf("%s: got keys %q, err %v, want %q", tc.name, got, err, tc.wantAlgs)
		}
	}
}

// selfSigned returns a PEM certificate for key.
func selfSigned(t testing.TB, key *ecdsa.PrivateKey) string {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "shop"},
		NotBefore:    t0(),
		NotAfter:     t0().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
