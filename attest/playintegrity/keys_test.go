package playintegrity

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestParseDecryptionKey(t *testing.T) {
	key := bytes.Repeat([]byte{0xfb, 0xff, 0x3e}, 11)[:32] // has '+', '/' in base64
	for _, s := range []string{
		base64.StdEncoding.EncodeToString(key),
		base64.RawStdEncoding.EncodeToString(key),
		base64.URLEncoding.EncodeToString(key),
		base64.RawURLEncoding.EncodeToString(key),
		" " + base64.StdEncoding.EncodeToString(key)[:20] + "\n" + base64.StdEncoding.EncodeToString(key)[20:] + "\n",
	} {
		got, err := ParseDecryptionKey(s)
		if err != nil || !bytes.Equal(got, key) {
			t.Errorf("ParseDecryptionKey(%q) = %x, %v; want %x", s, got, err, key)
		}
	}
	for _, c := range []struct{ in, says string }{
		{"", "not base64"},
		{"not base64!", "not base64"},
		{base64.StdEncoding.EncodeToString(key[:16]), "16 bytes, want 32"},
		{base64.StdEncoding.EncodeToString(append(key, 0)), "33 bytes, want 32"},
		{"+-" + base64.RawStdEncoding.EncodeToString(key)[2:], "not base64"},
	} {
		_, err := ParseDecryptionKey(c.in)
		if err == nil || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "decryption key") {
			t.Errorf("ParseDecryptionKey(%q): %v, want an error saying decryption key … %s", c.in, err, c.says)
		}
		if c.in != "" && err != nil && strings.Contains(err.Error(), c.in) {
			t.Errorf("ParseDecryptionKey's error quotes the key: %v", err)
		}
	}
}

func TestParseVerificationKey(t *testing.T) {
	der := func(pub any) string {
		b, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	got, err := ParseVerificationKey(der(&p256.PublicKey))
	if err != nil || !got.Equal(&p256.PublicKey) {
		t.Fatalf("ParseVerificationKey(P-256) = %v, %v", got, err)
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 1024)
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	sec1, _ := x509.MarshalECPrivateKey(p256)
	for _, c := range []struct{ name, in, says string }{
		{"empty", "", "not base64"},
		{"not base64", "%%%", "not base64"},
		{"not DER", base64.StdEncoding.EncodeToString([]byte("hello")), "not a DER SubjectPublicKeyInfo"},
		{"an EC private key", base64.StdEncoding.EncodeToString(sec1), "not a DER SubjectPublicKeyInfo"},
		{"a PEM block", "-----BEGIN PUBLIC KEY-----\n" + der(&p256.PublicKey) + "\n-----END PUBLIC KEY-----", "a PEM block"},
		{"P-384", der(&p384.PublicKey), "curve P-384, want P-256"},
		{"RSA", der(&rsaKey.PublicKey), "want an EC P-256 public key"},
		{"Ed25519", der(edPub), "want an EC P-256 public key"},
	} {
		_, err := ParseVerificationKey(c.in)
		if err == nil || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "verification key") {
			t.Errorf("%s: %v, want an error saying verification key … %s", c.name, err, c.says)
		}
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name string
		edit func(*Config)
		says string
	}{
		{"no decryption key", func(c *Config) { c.DecryptionKey = "" }, "decryption key"},
		{"keys swapped", func(c *Config) { c.DecryptionKey, c.VerificationKey = c.VerificationKey, c.DecryptionKey }, "decryption key"},
		{"no verification key", func(c *Config) { c.VerificationKey = "" }, "verification key"},
		{"no package", func(c *Config) { c.PackageName = "" }, "package name"},
		{"one-segment package", func(c *Config) { c.PackageName = "shop" }, "package name"},
		{"package with a space", func(c *Config) { c.PackageName = "com.example.shop " }, "package name"},
		{"package segment starting with a digit", func(c *Config) { c.PackageName = "com.1example" }, "package name"},
		{"negative MaxAge", func(c *Config) { c.MaxAge = -time.Second }, "MaxAge"},
		{"negative MaxSkew", func(c *Config) { c.MaxSkew = -time.Second }, "MaxSkew"},
	}
	for _, c := range cases {
		cfg := f.cfg
		c.edit(&cfg)
		v, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: New = %v, %v; want an error naming %s", c.name, v, err, c.says)
		}
	}
}

// TestLogsCarryNoKey: a Config or Verifier logged shows the package, never
// a key.
func TestLogsCarryNoKey(t *testing.T) {
	f := newFixture(t)
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	log.Info("play integrity", "config", f.cfg, "verifier", f.v)
	for _, secret := range []string{f.aesB64, f.pubB64, string(f.aesKey)} {
		if strings.Contains(out.String(), secret) {
			t.Fatalf("log carries a key: %s", out.String())
		}
	}
	if !strings.Contains(out.String(), testPackage) {
		t.Errorf("log lacks the package: %s", out.String())
	}
}
