package tokens

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestAdmissionHeader: an admission token's header is exactly what a
// gateway needs, with nothing a node could trust instead of the signature.
func TestAdmissionHeader(t *testing.T) {
	iss, keys := newTestIssuer(t)
	raw, _, err := iss.Issue("ev", "alice", 7, 5*time.Minute, t0())
	if err != nil {
		t.Fatal(err)
	}
	hb, err := unb64(strings.Split(raw, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(hb, &h); err != nil {
		t.Fatal(err)
	}
	if len(h) != 3 || h["alg"] != "EdDSA" || h["typ"] != "JWT" || h["kid"] != keys.Active() {
		t.Errorf("header %s, want exactly alg EdDSA, kid %s and typ JWT", hb, keys.Active())
	}
	// Verify recognizes it without decoding it (a matter of speed only).
	if vk := keys.snap.Load().verify[keys.Active()]; vk == nil || vk.header != strings.Split(raw, ".")[0] {
		t.Errorf("Verify does not recognize the header Issue writes")
	}
}

// TestAdmissionSignatureRequired: without a valid Ed25519 signature by a
// key of the set, nothing else in a token makes Verify accept it — not a
// genuine header and payload, not an "amac" header keyed from a secret
// the nodes share with other commands.
func TestAdmissionSignatureRequired(t *testing.T) {
	iss, keys := newTestIssuer(t)
	raw, _, err := iss.Issue("ev", "alice", 7, 5*time.Minute, t0())
	if err != nil {
		t.Fatal(err)
	}
	now := t0().Add(time.Minute)
	if _, err := iss.Verify(raw, "ev", now); err != nil {
		t.Fatalf("genuine: %v", err)
	}
	dot := strings.LastIndexByte(raw, '.')
	sig, err := unb64(raw[dot+1:])
	if err != nil {
		t.Fatal(err)
	}
	sig[10] ^= 1
	forgedPayload := b64([]byte(`{"iss":"anteroom","sub":"mallory","aud":["anteroom-claim"],"exp":1773480713,"nbf":1773480413,"iat":1773480413,"jti":"x","event":"ev","pos":1}`))
	forged := func(sig string) string {
		secret := testSecret(7)
		m := hmac.New(sha256.New, secret)
		m.Write([]byte("anteroom/admission-mac/v1"))
		m = hmac.New(sha256.New, m.Sum(nil))
		m.Write([]byte(keys.Active() + "." + forgedPayload))
		h, _ := json.Marshal(map[string]string{"alg": "EdDSA", "kid": keys.Active(), "typ": "JWT", "amac": b64(m.Sum(nil)[:16])})
		return b64(h) + "." + forgedPayload + "." + sig
	}
	for name, tok := range map[string]string{
		"signature removed":        raw[:dot+1],
		"signature altered":        raw[:dot+1] + b64(sig),
		"signature of zeros":       raw[:dot+1] + b64(make([]byte, ed25519.SignatureSize)),
		"amac, empty signature":    forged(""),
		"amac, zero signature":     forged(b64(make([]byte, ed25519.SignatureSize))),
		"amac, genuine signature":  forged(raw[dot+1:]),
		"two dots, no signature":   raw[:dot] + "..",
		"signature twice":          raw + "." + raw[dot+1:],
		"header and payload alone": raw[:dot],
	} {
		t.Run(name, func(t *testing.T) {
			_, err := iss.Verify(tok, "ev", now)
			checkErr(t, err, ErrInvalid)
		})
	}
}
