package tokens

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// maxUserTokenLen bounds a shop's user token; RS256 signatures and richer
// claims make them longer than ours.
const maxUserTokenLen = 8192

// UserVerifierConfig configures a [UserVerifier].
type UserVerifierConfig struct {
	// JWKSFile is the path of the shop's public keys: a JWK Set (RFC 7517)
	// or a single JWK in JSON, or PEM blocks (PUBLIC KEY, RSA PUBLIC KEY,
	// CERTIFICATE; certificates are not chain-checked). Supported: RSA
	// (2048..8192 bits) for RS256, EC P-256 for ES256, Ed25519 for EdDSA.
	// Required.
	JWKSFile string

	// Issuer, when set, must equal the token's iss.
	//
	// Default: "" (iss not checked)
	Issuer string

	// Audience, when set, must be among the token's aud.
	//
	// Default: "" (aud not checked)
	Audience string

	// Leeway is the clock skew tolerated when checking exp, nbf and iat.
	// Zero means the default; a negative value means no leeway at all.
	//
	// Default: 5s
	Leeway time.Duration

	// MaxAge caps a user token's lifetime: exp minus iat, or exp minus
	// now when the token has no iat. A stolen long-lived token is then
	// worth at most MaxAge. Negative means no cap.
	//
	// Default: 24h (DefaultUserMaxAge)
	MaxAge time.Duration

	// Algorithms pins the accepted JWS algorithms, a subset of the default.
	//
	// Default: ["RS256", "ES256", "EdDSA"]
	Algorithms []string
}

// DefaultUserMaxAge is UserVerifierConfig.MaxAge's default.
const DefaultUserMaxAge = 24 * time.Hour

// UserVerifier verifies a shop's own user tokens (ANTEROOM_IDENTITY=jwt) and
// returns the user id from their sub claim.
//
// A token is accepted only if its alg is pinned, a key of that algorithm in
// the file verifies it (the kid header selects the key when both have one;
// keys without a kid are tried for any token), exp is present and not past,
// nbf and iat are not in the future (each with leeway), iss and aud match
// when configured, the lifetime is within MaxAge, and sub is not empty. Input longer than 8192 bytes is
// refused before parsing. Every failure wraps [ErrInvalid].
//
// A *UserVerifier is safe for concurrent use; [UserVerifier.Reload] swaps
// the keys atomically. The zero value is not usable; call [NewUserVerifier].
type UserVerifier struct {
	cfg  UserVerifierConfig
	keys atomic.Pointer[[]publicKey]
}

// NewUserVerifier loads the keys named by cfg.JWKSFile. It fails if the
// file is missing, malformed or holds no usable key, or if cfg.Algorithms
// names an algorithm other than RS256, ES256 or EdDSA.
func NewUserVerifier(cfg UserVerifierConfig) (*UserVerifier, error) {
	if cfg.JWKSFile == "" {
		return nil, errors.New("tokens: user verifier needs a JWKS file")
	}
	supported := []string{"RS256", "ES256", "EdDSA"}
	if cfg.Algorithms == nil {
		cfg.Algorithms = supported
	}
	for _, alg := range cfg.Algorithms {
		if !slices.Contains(supported, alg) {
			return nil, fmt.Errorf("tokens: user token algorithm %q not supported", alg)
		}
	}
	cfg.Algorithms = slices.Clone(cfg.Algorithms)
	switch {
	case cfg.Leeway == 0:
		cfg.Leeway = 5 * time.Second
	case cfg.Leeway < 0:
		cfg.Leeway = 0
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = DefaultUserMaxAge
	}
	u := &UserVerifier{cfg: cfg}
	if err := u.Reload(); err != nil {
		return nil, err
	}
	return u, nil
}

// Reload re-reads the key file, for when the shop rotates its keys. On
// error the previous keys stay in use.
func (u *UserVerifier) Reload() error {
	data, err := os.ReadFile(u.cfg.JWKSFile)
	if err != nil {
		return fmt.Errorf("tokens: read user keys: %w", err)
	}
	keys, err := parsePublicKeys(data)
	if err != nil {
		return fmt.Errorf("%w (%s)", err, u.cfg.JWKSFile)
	}
	u.keys.Store(&keys)
	return nil
}

// Verify checks the user token raw at instant now and returns its sub.
func (u *UserVerifier) Verify(raw string, now time.Time) (user string, err error) {
	if len(raw) > maxUserTokenLen {
		return "", invalid(fmt.Sprintf("user token longer than %d bytes", maxUserTokenLen))
	}
	keys := *u.keys.Load()
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(u.cfg.Algorithms),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(u.cfg.Leeway),
		jwt.WithTimeFunc(func() time.Time { return now }),
	}
	if u.cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(u.cfg.Issuer))
	}
	if u.cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(u.cfg.Audience))
	}
	var c jwt.RegisteredClaims
	_, err = jwt.NewParser(opts...).ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) {
		if _, ok := t.Header["crit"]; ok {
			return nil, errors.New("crit header not supported")
		}
		return selectKeys(keys, t)
	})
	if err != nil {
		return "", invalid(err)
	}
	if c.Subject == "" {
		return "", invalid("user token without sub")
	}
	if err := u.checkLifetime(&c, now); err != nil {
		return "", err
	}
	return c.Subject, nil
}

// checkLifetime refuses a token that lives longer than MaxAge (exp is
// required and checked by the parser).
func (u *UserVerifier) checkLifetime(c *jwt.RegisteredClaims, now time.Time) error {
	if u.cfg.MaxAge < 0 {
		return nil
	}
	from := now
	if c.IssuedAt != nil {
		from = c.IssuedAt.Time
	}
	if life := c.ExpiresAt.Sub(from); life > u.cfg.MaxAge+u.cfg.Leeway {
		return invalid(fmt.Sprintf("user token lives %v, longer than the %v allowed", life.Round(time.Second), u.cfg.MaxAge))
	}
	return nil
}

// selectKeys returns the keys that may verify t: those of its algorithm
// whose kid matches the token's, plus those without a kid.
func selectKeys(keys []publicKey, t *jwt.Token) (any, error) {
	alg := t.Method.Alg()
	kid, _ := t.Header["kid"].(string)
	var set jwt.VerificationKeySet
	for _, k := range keys {
		if k.alg == alg && (k.kid == "" || kid == "" || k.kid == kid) {
			set.Keys = append(set.Keys, k.key)
		}
	}
	if len(set.Keys) == 0 {
		return nil, fmt.Errorf("no %s key with kid %q", alg, kid)
	}
	return set, nil
}
