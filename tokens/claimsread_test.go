package tokens

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzIssuedClaims holds issuedClaims to json.Unmarshal: whatever it
// reads, json.Unmarshal reads to the same claims.
func FuzzIssuedClaims(f *testing.F) {
	keys := openTestKeys(f, f.TempDir())
	iss := NewIssuer(keys, IssuerConfig{})
	for _, user := range []string{"alice", "h1", "a b", `qu"ote`, `back\slash`, "é", "\x7f", ""} {
		raw, _, err := iss.Issue("ev", user, 7, 5*time.Minute, t0())
		if err != nil {
			continue
		}
		p, err := b64Strict.DecodeString(strings.Split(raw, ".")[1])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
	}
	good := `{"iss":"anteroom","sub":"alice","aud":["anteroom-claim"],"exp":1700003600,"nbf":1700000000,"iat":1700000000,"jti":"j","event":"ev","pos":3}`
	for _, p := range []string{
		good, strings.Replace(good, `"pos":3`, `"pos":03`, 1), strings.Replace(good, `"pos":3`, `"pos":1.5`, 1),
		strings.Replace(good, `"pos":3`, `"pos":-3`, 1), strings.Replace(good, `"exp":1700003600`, `"exp":1e9`, 1),
		strings.Replace(good, `"exp":1700003600`, `"exp":1234567890123456`, 1), strings.Replace(good, `"iss"`, `"ISS"`, 1),
		strings.Replace(good, `"aud":["anteroom-claim"]`, `"aud":"anteroom-claim"`, 1), good + " ", good + "x", `{}`, `null`,
		strings.Replace(good, `"sub":"alice"`, `"sub":"al\u0069ce"`, 1), strings.Replace(good, `,"pos":3`, ``, 1),
	} {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		var fast admissionClaims
		if !issuedClaims(p, &fast) {
			if !reflect.DeepEqual(fast, admissionClaims{}) {
				t.Fatalf("%q: refused but wrote %+v", p, fast)
			}
			return
		}
		var slow admissionClaims
		if err := json.Unmarshal(p, &slow); err != nil {
			t.Fatalf("%q: read, but json.Unmarshal fails: %v", p, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nissuedClaims %+v\njson         %+v", p, fast, slow)
		}
	})
}

// TestIssuedClaimsReadsIssue checks that the tokens Issue writes take the
// fast path.
func TestIssuedClaimsReadsIssue(t *testing.T) {
	keys := openTestKeys(t, t.TempDir())
	iss := NewIssuer(keys, IssuerConfig{})
	raw, _, err := iss.Issue("ev", "alice", 7, 5*time.Minute, t0())
	if err != nil {
		t.Fatal(err)
	}
	p, err := b64Strict.DecodeString(strings.Split(raw, ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	var c admissionClaims
	if !issuedClaims(p, &c) {
		t.Fatalf("Issue's claims %s do not take the fast path", p)
	}
}
