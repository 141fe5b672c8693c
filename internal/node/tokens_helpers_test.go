package node_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/golang-jwt/jwt/v5"
)

// Helpers of the tokens_*_test.go files: tokens and keys seen from outside,
// as a gateway, a shop or an operator would handle them.

// payloadOf decodes, without verifying, the claims of a compact JWT.
func payloadOf(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q has %d parts, want 3", tok, len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("token payload: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("token payload: %v", err)
	}
	return m
}

// kidOf returns the kid header of a compact JWT, unverified.
func kidOf(t *testing.T, tok string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	if err != nil {
		t.Fatalf("token header: %v", err)
	}
	var h struct {
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatalf("token header: %v", err)
	}
	return h.Kid
}

// sign signs claims with method and key, setting the kid header when kid
// is not empty.
func sign(t *testing.T, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	raw, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign %s: %v", method.Alg(), err)
	}
	return raw
}

// unsignedJWT is an alg "none" token over header and claims.
func unsignedJWT(t *testing.T, header map[string]any, claims jwt.MapClaims) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(header) + "." + enc(claims) + "."
}

// signingKey reads the private key of kid from a node's key directory
// (PKCS #8 PEM in <kid>.pem), to forge tokens with the genuine key.
func signingKey(t *testing.T, dir, kid string) ed25519.PrivateKey {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, kid+".pem"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s.pem: no PEM block", kid)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return key.(ed25519.PrivateKey)
}

// jwksOf fetches the node's JWKS and returns its kids in order.
func jwksOf(t *testing.T, n *node.Node) []string {
	t.Helper()
	a := nodetest.Call(t, http.MethodGet, n.URL()+"/.well-known/jwks.json", nil, nil)
	if a.Status != http.StatusOK {
		t.Fatalf("jwks: %d %s", a.Status, a.Raw)
	}
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(a.Raw, &set); err != nil {
		t.Fatalf("jwks: %v", err)
	}
	var kids []string
	for _, k := range set.Keys {
		kids = append(kids, k.Kid)
	}
	return kids
}

// buildAnteroom builds the anteroom command into a temp dir, so tests run
// `anteroom keys` exactly as an operator would.
func buildAnteroom(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build anteroom: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "anteroom")
	out, err := exec.Command(goTool, "build", "-o", bin, "github.com/anteroom/anteroom/cmd/anteroom").CombinedOutput()
	if err != nil {
		t.Fatalf("go build anteroom: %v\n%s", err, out)
	}
	return bin
}

// anteroomCmd runs the built command with args and returns its stdout.
func anteroomCmd(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "ANTEROOM_SIGNING_KEYS=", "ANTEROOM_DATA_DIR=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("anteroom %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// anteroomFails runs the built command with args, expects it to fail, and
// returns its stderr.
func anteroomFails(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "ANTEROOM_SIGNING_KEYS=", "ANTEROOM_DATA_DIR=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("anteroom %s succeeded, want a failure:\n%s", strings.Join(args, " "), out)
	}
	return string(out)
}

// cookieOf returns the value of the cookie name set by an answer, and the
// whole Set-Cookie line.
func cookieOf(a nodetest.Answer, name string) (value, line string) {
	for _, l := range a.Header.Values("Set-Cookie") {
		if strings.HasPrefix(l, name+"=") {
			v, _, _ := strings.Cut(strings.TrimPrefix(l, name+"="), ";")
			return v, l
		}
	}
	return "", ""
}

// problemOK reports whether an answer is problem+json with status and code.
func problemOK(t *testing.T, a nodetest.Answer, status int, code string) {
	t.Helper()
	if a.Status != status || nodetest.Str(a.Body, "code") != code {
		t.Errorf("got %d %s, want %d %s", a.Status, a.Raw, status, code)
	}
	if ct := a.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Errorf("content type %q, want application/problem+json", ct)
	}
}

// pollAdmission polls status with a ticket until an admission token comes.
func pollAdmission(t *testing.T, n *node.Node, ev, ticket string) string {
	t.Helper()
	var token string
	nodetest.WaitFor(t, "admission", 10*time.Second, func() bool {
		s := nodetest.Call(t, http.MethodGet, n.URL()+"/events/"+ev+"/status", map[string]string{"Authorization": "Bearer " + ticket}, nil)
		token = nodetest.Str(s.Body, "admission_token")
		return token != ""
	})
	return token
}
