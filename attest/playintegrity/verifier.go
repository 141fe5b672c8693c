package playintegrity

import (
	"crypto/ecdsa"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Errors a verification returns; match them with errors.Is.
var (
	// ErrMalformed: the token as sent does not parse as a compact JWE
	// with a readable protected header (a client fault: 400). What is
	// inside the encryption is judged by ErrAttestation: only a holder of
	// the decryption key could have written it.
	ErrMalformed = errors.New("playintegrity: malformed integrity token")
	// ErrAttestation: the token parses but fails a check: an algorithm
	// other than A256KW/A256GCM and ES256, a key, the signature, the
	// nonce or request hash, the package, the time, or the policy (403
	// attestation_failed).
	ErrAttestation = errors.New("playintegrity: attestation failed")
	// ErrStale: the token was issued longer ago than Config.MaxAge (the
	// app may ask Google Play for a fresh one). It is an ErrAttestation:
	// errors.Is(ErrStale, ErrAttestation) holds.
	ErrStale error = staleError{}
)

// staleError is ErrStale's type: a failed attestation of its own kind.
type staleError struct{}

func (staleError) Error() string        { return "playintegrity: integrity token too old" }
func (staleError) Is(target error) bool { return target == ErrAttestation }

// MaxTokenBytes bounds the token accepted: a real one is a few kilobytes.
const MaxTokenBytes = 16 << 10

// The algorithms Google uses, and the only ones accepted.
const (
	keyAlgorithm       = jose.A256KW
	contentEncryption  = jose.A256GCM
	signatureAlgorithm = jose.ES256
)

// Config is a Verifier's configuration: the Play Console's keys for one
// app, and the time window a token is accepted in.
type Config struct {
	// DecryptionKey is the Play Console's decryption key, base64 (see
	// ParseDecryptionKey). Required.
	DecryptionKey string
	// VerificationKey is the Play Console's verification key, base64 DER
	// (see ParseVerificationKey). Required.
	VerificationKey string
	// PackageName is the app's package name (com.example.shop): both
	// requestDetails.requestPackageName and appIntegrity.packageName must
	// equal it. Required.
	PackageName string
	// MaxAge is how long after requestDetails.timestampMillis a token is
	// accepted: long enough for a slow mobile network, short enough that
	// a token taken from a genuine phone must be spent at once.
	//
	// Default: 2 minutes
	MaxAge time.Duration
	// MaxSkew is how far in the future timestampMillis may be (Google's
	// clock against this node's).
	//
	// Default: 10 seconds
	MaxSkew time.Duration
}

// LogValue keeps the keys out of logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("package", c.PackageName),
		slog.Duration("max_age", c.MaxAge), slog.Duration("max_skew", c.MaxSkew))
}

// packageName is Android's rule: two or more dot-separated segments, each
// a letter then letters, digits or underscores.
var packageName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$`)

// Verifier verifies integrity tokens of one app. It holds no mutable
// state: safe for concurrent use.
type Verifier struct {
	decryptionKey   []byte
	verificationKey *ecdsa.PublicKey
	packageName     string
	maxAge, maxSkew time.Duration
}

// New checks cfg and returns its Verifier; its errors name the field.
func New(cfg Config) (*Verifier, error) {
	dk, err := ParseDecryptionKey(cfg.DecryptionKey)
	if err != nil {
		return nil, err
	}
	vk, err := ParseVerificationKey(cfg.VerificationKey)
	if err != nil {
		return nil, err
	}
	if !packageName.MatchString(cfg.PackageName) {
		return nil, fmt.Errorf("play integrity: package name %q is not an Android package name", cfg.PackageName)
	}
	if cfg.MaxAge < 0 || cfg.MaxSkew < 0 {
		return nil, errors.New("play integrity: MaxAge and MaxSkew must not be negative")
	}
	v := &Verifier{decryptionKey: dk, verificationKey: vk, packageName: cfg.PackageName,
		maxAge: cfg.MaxAge, maxSkew: cfg.MaxSkew}
	if v.maxAge == 0 {
		v.maxAge = 2 * time.Minute
	}
	if v.maxSkew == 0 {
		v.maxSkew = 10 * time.Second
	}
	return v, nil
}

// LogValue keeps the keys out of logs.
func (v *Verifier) LogValue() slog.Value {
	return slog.GroupValue(slog.String("package", v.packageName))
}

// Expect is what the caller asked Google Play to attest: exactly one of
// Nonce (classic requests: the base64url nonce the server issued) or
// RequestHash (standard requests: the hash the app was told to send).
type Expect struct {
	Nonce       string
	RequestHash string
}

// Verify decrypts and verifies token at now and returns its verdict when
// every check of the package comment holds and the verdicts satisfy p.
// It returns ErrMalformed, ErrAttestation or (with ErrAttestation)
// ErrStale, wrapped with the reason for the log; an Expect with neither or
// both fields set is a programming error, returned unwrapped.
func (v *Verifier) Verify(token string, want Expect, p Policy, now time.Time) (Verdict, error) {
	if (want.Nonce == "") == (want.RequestHash == "") {
		return Verdict{}, errors.New("play integrity: Expect needs exactly one of Nonce and RequestHash")
	}
	payload, err := v.open(token)
	if err != nil {
		return Verdict{}, err
	}
	verdict, err := parseVerdict(payload)
	if err != nil {
		return Verdict{}, fmt.Errorf("%w: signed verdict: %v", ErrAttestation, err)
	}
	if err := v.checkRequest(verdict, want, now); err != nil {
		return Verdict{}, err
	}
	if err := p.check(verdict); err != nil {
		return Verdict{}, err
	}
	if verdict.PackageName != v.packageName {
		return Verdict{}, fmt.Errorf("%w: app package %q", ErrAttestation, verdict.PackageName)
	}
	return verdict, nil
}

// open decrypts the JWE and verifies the JWS inside it, returning the
// signed payload. Algorithms are checked on the headers before any key is
// used, and again by go-jose's allow lists.
func (v *Verifier) open(token string) ([]byte, error) {
	if len(token) == 0 || len(token) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrMalformed, len(token))
	}
	if err := pinned("JWE", token, 5, map[string]string{"alg": string(keyAlgorithm), "enc": string(contentEncryption)}, ErrMalformed); err != nil {
		return nil, err
	}
	jwe, err := jose.ParseEncryptedCompact(token, []jose.KeyAlgorithm{keyAlgorithm}, []jose.ContentEncryption{contentEncryption})
	if err != nil {
		return nil, fmt.Errorf("%w: JWE: %v", ErrMalformed, err)
	}
	inner, err := jwe.Decrypt(v.decryptionKey)
	if err != nil {
		return nil, fmt.Errorf("%w: JWE does not decrypt under the decryption key", ErrAttestation)
	}
	// Only a holder of the decryption key wrote what is inside: whatever
	// is wrong with it is a failed attestation, never a client's typo.
	if err := pinned("JWS inside the JWE", string(inner), 3, map[string]string{"alg": string(signatureAlgorithm)}, ErrAttestation); err != nil {
		return nil, err
	}
	jws, err := jose.ParseSignedCompact(string(inner), []jose.SignatureAlgorithm{signatureAlgorithm})
	if err != nil {
		return nil, fmt.Errorf("%w: JWS: %v", ErrAttestation, err)
	}
	payload, err := jws.Verify(v.verificationKey)
	if err != nil {
		return nil, fmt.Errorf("%w: JWS signature does not verify under the verification key", ErrAttestation)
	}
	return payload, nil
}

// checkRequest checks the verdict's requestDetails against the caller's
// request and this app, and its time against now.
func (v *Verifier) checkRequest(got Verdict, want Expect, now time.Time) error {
	if want.Nonce != "" {
		if !sameNonce(got.Nonce, want.Nonce) {
			return fmt.Errorf("%w: nonce differs", ErrAttestation)
		}
	} else if subtle.ConstantTimeCompare([]byte(got.RequestHash), []byte(want.RequestHash)) != 1 {
		return fmt.Errorf("%w: request hash differs", ErrAttestation)
	}
	if got.RequestPackageName != v.packageName {
		return fmt.Errorf("%w: request package %q", ErrAttestation, got.RequestPackageName)
	}
	// Compare instants, not now.Sub(issued): a Duration saturates, and
	// the negation of the most negative one is itself.
	if now.After(got.Issued.Add(v.maxAge)) {
		return fmt.Errorf("%w: issued %s ago, max %s", ErrStale, now.Sub(got.Issued).Round(time.Millisecond), v.maxAge)
	}
	if got.Issued.After(now.Add(v.maxSkew)) {
		return fmt.Errorf("%w: issued %s in the future, max skew %s", ErrAttestation, got.Issued.Sub(now).Round(time.Millisecond), v.maxSkew)
	}
	return nil
}

// sameNonce compares nonces in constant time, as bytes when both are
// base64 (padding and alphabet may differ from what the server issued),
// else as strings.
func sameNonce(got, want string) bool {
	gb, gerr := decodeBase64(got)
	wb, werr := decodeBase64(want)
	if gerr == nil && werr == nil {
		return subtle.ConstantTimeCompare(gb, wb) == 1
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
