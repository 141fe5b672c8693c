package tokens

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func TestCheckSecret(t *testing.T) {
	random := make([]byte, 32)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	count := make([]byte, 32)
	for i := range count {
		count[i] = byte(i)
	}
	fromHex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	weak := map[string][]byte{
		"short":             random[:31],
		"all zeros":         make([]byte, 32),
		"one repeated byte": bytes.Repeat([]byte{0x5a}, 32),
		"repeated pair":     bytes.Repeat([]byte{0xab, 0xcd}, 16),
		"repeated 8 bytes":  bytes.Repeat(random[:8], 4),
		"counting":          count,
		"ascii text":        []byte("secretsecretsecretsecretsecret!!"),
		"low entropy":       append(bytes.Repeat(random[:4], 7), random[4:8]...),
		"compose default":   fromHex(strings.Repeat("0", 64)),
	}
	for name, s := range weak {
		if err := CheckSecret(s); !errors.Is(err, ErrWeakSecret) {
			t.Errorf("%s: got %v, want ErrWeakSecret", name, err)
		} else if strings.Contains(err.Error(), hex.EncodeToString(s)) {
			t.Errorf("%s: the error %q shows the secret", name, err)
		}
	}
	for i := range 100 {
		s := make([]byte, 32+i%3*16)
		if _, err := rand.Read(s); err != nil {
			t.Fatal(err)
		}
		if err := CheckSecret(s); err != nil {
			t.Fatalf("a random secret: %v", err)
		}
	}
}

func TestCheckAdminToken(t *testing.T) {
	weak := map[string]string{
		"empty":             "",
		"23 characters":     "k3J9xQ2mW7pL4vN8rT1yB6z",
		"compose default":   "compose-admin-token-change-me",
		"k8s placeholder":   "REPLACE-with-openssl-rand-hex-24",
		"contains changeme": "my-prod-token-CHANGEME-4711-abcdef",
		"repeated":          strings.Repeat("a", 40),
		"repeated pattern":  strings.Repeat("abc123", 5),
		"few characters":    "abababababababababcdcdcdcdcdcdcd",
	}
	for name, tok := range weak {
		err := CheckAdminToken(tok)
		if !errors.Is(err, ErrWeakSecret) {
			t.Errorf("%s: got %v, want ErrWeakSecret", name, err)
		} else if tok != "" && strings.Contains(err.Error(), tok) {
			t.Errorf("%s: the error %q shows the token", name, err)
		}
	}
	for _, tok := range []string{"k3J9xQ2mW7pL4vN8rT1yB6zA", "3f9c0e1b7a2d4c6e8f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c"} {
		if err := CheckAdminToken(tok); err != nil {
			t.Errorf("%q: %v", tok, err)
		}
	}
}
