package tokens

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Admission is what an admission token says: user User, at position Pos of
// event Event, may claim between NotBefore and ExpiresAt. ID is the token's
// unique jti. Times are whole seconds; verified ones are in UTC.
type Admission struct {
	Event     string
	User      string
	Pos       int64
	ID        string
	IssuedAt  time.Time
	NotBefore time.Time
	ExpiresAt time.Time
}

// The defaults of IssuerConfig.
const (
	// DefaultIssuer is the iss of admission tokens when none is set.
	DefaultIssuer = "anteroom"
	// DefaultAudience is their aud when none is set.
	DefaultAudience = "anteroom-claim"
	// DefaultLeeway is the clock skew tolerated on exp, nbf and iat when
	// none is set.
	DefaultLeeway = 5 * time.Second
)

// IssuerConfig configures an [Issuer]. The zero value gives the defaults.
type IssuerConfig struct {
	// Issuer is the iss claim written and required.
	//
	// Default: "anteroom"
	Issuer string

	// Audience is the aud claim written and required.
	//
	// Default: "anteroom-claim"
	Audience string

	// Leeway is the clock skew tolerated when checking exp, nbf and iat.
	// Zero means the default; a negative value means no leeway at all.
	//
	// Default: 5s
	Leeway time.Duration
}

// Issuer mints and verifies admission tokens: JWTs signed with the active
// key of a [KeySet] using EdDSA (Ed25519), header {"alg":"EdDSA","kid":...,
// "typ":"JWT"}, claims iss, sub (user), aud, exp, nbf, iat, jti, event and
// pos.
//
// Verification is strict and the same on every node as at a gateway with
// the JWKS: the Ed25519 signature is always verified (nothing else vouches
// for a token), only EdDSA, only kids present in the KeySet, all
// of those claims required, iss and aud must match, exp, nbf and iat are
// checked against the time passed in with a small leeway, and input longer
// than 4096 bytes is refused before parsing.
//
// An *Issuer is safe for concurrent use. The zero value is not usable; call
// [NewIssuer].
type Issuer struct {
	keys     *KeySet
	issuer   string
	audience string
	leeway   time.Duration
}

// NewIssuer returns an Issuer signing with keys' active key.
func NewIssuer(keys *KeySet, cfg IssuerConfig) *Issuer {
	i := &Issuer{keys: keys, issuer: cfg.Issuer, audience: cfg.Audience, leeway: cfg.Leeway}
	if i.issuer == "" {
		i.issuer = DefaultIssuer
	}
	if i.audience == "" {
		i.audience = DefaultAudience
	}
	switch {
	case i.leeway == 0:
		i.leeway = DefaultLeeway
	case i.leeway < 0:
		i.leeway = 0
	}
	return i
}

// Algorithms returns the JWS algorithms of admission tokens, as advertised
// in OIDC discovery (id_token_signing_alg_values_supported): ["EdDSA"].
func (i *Issuer) Algorithms() []string { return []string{jwt.SigningMethodEdDSA.Alg()} }

// admissionClaims is the JSON payload of an admission token.
type admissionClaims struct {
	jwt.RegisteredClaims
	Event string `json:"event"`
	Pos   *int64 `json:"pos,omitempty"`
}

// Validate runs after the library's checks of exp, nbf, iat, iss and aud; it
// requires the claims the library treats as optional.
func (c admissionClaims) Validate() error {
	switch {
	case c.Subject == "":
		return errors.New("missing sub")
	case c.ID == "":
		return errors.New("missing jti")
	case c.IssuedAt == nil:
		return errors.New("missing iat")
	case c.Event == "":
		return errors.New("missing event")
	case c.Pos == nil || *c.Pos < 1:
		return errors.New("missing or non-positive pos")
	}
	return nil
}

// Issue signs an admission token for user at position pos of event, valid
// from now (iat = nbf = now, whole seconds) for ttl, with a random 128-bit
// jti. It fails if event or user is empty, longer than 256 bytes or not
// valid UTF-8, if pos < 1 or if ttl is shorter than a second.
func (i *Issuer) Issue(event, user string, pos int64, ttl time.Duration, now time.Time) (string, Admission, error) {
	if err := checkID("event", event); err != nil {
		return "", Admission{}, err
	}
	if err := checkID("user", user); err != nil {
		return "", Admission{}, err
	}
	if pos < 1 {
		return "", Admission{}, fmt.Errorf("tokens: admission pos %d, want >= 1", pos)
	}
	if ttl < time.Second {
		return "", Admission{}, fmt.Errorf("tokens: admission ttl %v, want >= 1s", ttl)
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", Admission{}, fmt.Errorf("tokens: jti: %w", err)
	}
	a := Admission{
		Event: event, User: user, Pos: pos, ID: b64(id[:]),
		IssuedAt:  time.Unix(now.Unix(), 0).UTC(),
		ExpiresAt: time.Unix(now.Add(ttl).Unix(), 0).UTC(),
	}
	a.NotBefore = a.IssuedAt
	snap := i.keys.snap.Load()
	claims, err := json.Marshal(admissionClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    i.issuer,
			Subject:   user,
			Audience:  jwt.ClaimStrings{i.audience},
			ExpiresAt: jwt.NewNumericDate(a.ExpiresAt),
			NotBefore: jwt.NewNumericDate(a.NotBefore),
			IssuedAt:  jwt.NewNumericDate(a.IssuedAt),
			ID:        a.ID,
		},
		Event: event,
		Pos:   &pos,
	})
	if err != nil {
		return "", Admission{}, fmt.Errorf("tokens: admission claims: %w", err)
	}
	raw := signJWT(snap.verify[snap.active], claims)
	return raw, a, nil
}

// Verify checks raw at instant now and returns the admission it carries. It
// returns an error wrapping [ErrInvalid] for anything malformed, forged,
// signed by an unknown or retired key, incomplete, expired or not yet valid,
// and one wrapping [ErrWrongEvent] for a valid token of another event.
func (i *Issuer) Verify(raw, event string, now time.Time) (Admission, error) {
	if len(raw) > maxTokenLen {
		return Admission{}, invalid(fmt.Sprintf("token longer than %d bytes", maxTokenLen))
	}
	c, err := i.verifyToken(i.keys.snap.Load(), raw, now)
	if err != nil {
		return Admission{}, invalid(err)
	}
	return i.admissionOf(c, event)
}

func (i *Issuer) admissionOf(c *admissionClaims, event string) (Admission, error) {
	if c.Event != event {
		return Admission{}, fmt.Errorf("%w: admission for event %q", ErrWrongEvent, c.Event)
	}
	return Admission{
		Event: c.Event, User: c.Subject, Pos: *c.Pos, ID: c.ID,
		IssuedAt:  c.IssuedAt.UTC(),
		NotBefore: c.NotBefore.UTC(),
		ExpiresAt: c.ExpiresAt.UTC(),
	}, nil
}
