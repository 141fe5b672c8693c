package appattest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/fxamacker/cbor/v2"
)

// Config says which app's evidence a [Verifier] accepts.
type Config struct {
	// AppID is the app's App ID: its 10-character Team ID, a dot and its
	// bundle id ("ABCDE12345.com.example.shop"). Required.
	AppID string

	// AllowDevelopment accepts attestations from Apple's development
	// environment (AAGUID "appattestdevelop", made by builds signed for
	// development) besides production ones. Development keys prove much
	// less: leave it off for a real sale.
	//
	// Default: false (production only)
	AllowDevelopment bool

	// Roots are the certificate authorities an attestation's chain must end
	// at. Only tests set it, to a root they made.
	//
	// Default: only the embedded Apple App Attestation Root CA ([AppleRoot])
	Roots *x509.CertPool
}

// Verifier checks App Attest attestations and assertions for one app.
// Make it with [New]; it is immutable and safe for concurrent use.
type Verifier struct {
	appIDHash   [32]byte
	roots       *x509.CertPool
	development bool
	decode      cbor.DecMode
}

// maxEvidenceLen bounds an attestation object or assertion before it is
// decoded. A real attestation object is about 5.5 KB (two certificates
// and Apple's receipt); an assertion about 150 bytes.
const maxEvidenceLen = 64 << 10

// New returns a Verifier for cfg, or an error when cfg.AppID is not a
// Team ID and a bundle id, or the embedded Apple root fails its pin.
func New(cfg Config) (*Verifier, error) {
	if err := validAppID(cfg.AppID); err != nil {
		return nil, err
	}
	roots := cfg.Roots
	if roots == nil {
		apple, err := AppleRoot()
		if err != nil {
			return nil, err
		}
		roots = x509.NewCertPool()
		roots.AddCert(apple)
	}
	decode, err := cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		IndefLength:      cbor.IndefLengthForbidden,
		TagsMd:           cbor.TagsForbidden,
		MaxNestedLevels:  8,
		MaxArrayElements: 16,
		MaxMapPairs:      16,
	}.DecMode()
	if err != nil {
		return nil, fmt.Errorf("appattest: CBOR decoder: %w", err)
	}
	return &Verifier{
		appIDHash:   sha256.Sum256([]byte(cfg.AppID)),
		roots:       roots,
		development: cfg.AllowDevelopment,
		decode:      decode,
	}, nil
}

// validAppID reports whether id is a Team ID (10 upper-case letters or
// digits), a dot and a non-empty bundle id.
func validAppID(id string) error {
	team, bundle, ok := strings.Cut(id, ".")
	if !ok || len(team) != 10 || bundle == "" || strings.ContainsFunc(team, func(r rune) bool {
		return (r < 'A' || r > 'Z') && (r < '0' || r > '9')
	}) {
		return fmt.Errorf("appattest: App ID %q is not TEAMID.bundle.id (a 10-character Team ID, a dot, a bundle id)", id)
	}
	return nil
}

// Key is an attested key: what the server stores, with the last assertion
// counter, to verify the key's assertions.
type Key struct {
	// ID is the key identifier: SHA-256 of PublicKey as an uncompressed
	// point. The app reports it base64-encoded (keyId).
	ID []byte

	// PublicKey is the key's ECDSA P-256 public key.
	PublicKey *ecdsa.PublicKey
}

// PublicKeyBytes returns the key as an uncompressed P-256 point (65
// bytes), the form [ParseKey] reads back.
func (k Key) PublicKeyBytes() []byte {
	b, err := k.PublicKey.Bytes()
	if err != nil {
		return nil
	}
	return b
}

// ParseKey reads a key stored as [Key.PublicKeyBytes] and recomputes its ID.
func ParseKey(publicKey []byte) (Key, error) {
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), publicKey)
	if err != nil {
		return Key{}, fmt.Errorf("appattest: stored key: %w", err)
	}
	return keyOf(pub)
}

// keyOf returns pub as a Key, or an error unless it is a P-256 key.
func keyOf(pub *ecdsa.PublicKey) (Key, error) {
	if pub == nil || pub.Curve != elliptic.P256() {
		return Key{}, errors.New("not an ECDSA P-256 key")
	}
	b, err := pub.Bytes()
	if err != nil {
		return Key{}, err
	}
	id := sha256.Sum256(b)
	return Key{ID: id[:], PublicKey: pub}, nil
}
