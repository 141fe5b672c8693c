package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/anteroom/anteroom/tokens"
)

// Admission is what a verified admission token says: user User, at
// position Pos of event Event, may claim between NotBefore and ExpiresAt;
// ID is its jti.
type Admission = tokens.Admission

// VerifierConfig configures a Verifier.
type VerifierConfig struct {
	// JWKSURL is the node's key set, e.g.
	// https://queue.shop.example/.well-known/jwks.json. Required.
	JWKSURL string
	// Issuer is the iss required (ANTEROOM_ISSUER).
	//
	// Default: "anteroom"
	Issuer string
	// Audience is the aud required (ANTEROOM_AUDIENCE).
	//
	// Default: "anteroom-claim"
	Audience string
	// Leeway is the clock skew tolerated on exp, nbf and iat; negative
	// is none.
	//
	// Default: 5s
	Leeway time.Duration
	// Refresh is how long fetched keys are used before they are fetched
	// again. A token of a key not in the set fetches them at once (a
	// rotation), at most once per MinRefetch.
	//
	// Default: 5m
	Refresh time.Duration
	// MinRefetch is the least time between two fetches of the key set,
	// so tokens of unknown kids cannot make the Verifier hammer the node.
	// A staged rotation (`anteroom keys rotate`, then `promote`) publishes
	// a key 300 s before it signs, so with Refresh at most that no token
	// waits for this; a key made the signer at once may be refused for up
	// to MinRefetch after a fetch.
	//
	// Default: 5s
	MinRefetch time.Duration
	// HTTPClient fetches the key set.
	//
	// Default: a client with a 10 s timeout
	HTTPClient *http.Client
	// Now is the clock tokens are checked against.
	//
	// Default: time.Now
	Now func() time.Time
}

// KeysError is a verification that failed closed because the key set
// could not be fetched or read: no token is accepted without keys. It
// wraps tokens.ErrInvalid (refuse the token) and the fetch's error; a
// service may answer it with 503 instead of 401.
type KeysError struct {
	URL string
	Err error
}

func (e *KeysError) Error() string {
	return "anteroom: admission keys from " + e.URL + ": " + e.Err.Error()
}

// Unwrap returns tokens.ErrInvalid and the fetch's error.
func (e *KeysError) Unwrap() []error { return []error{tokens.ErrInvalid, e.Err} }

// Verifier checks admission tokens offline for a service (an origin, an
// API behind the waiting room) with the node's published keys, as the
// node itself does (tokens.AdmissionKeys): the Ed25519 signature, alg
// EdDSA only, a kid of the key set, iss, aud, the event, exp and nbf with
// leeway.
//
// It checks the token, not the sale's door: a token records no door
// verdict, so a user blocked (or taken off an eligibility list) after
// the token was minted passes until it expires, and the door's rules on
// the request do not apply. The node's gate applies them (docs/integrate.md,
// "Where the door applies"); a claim asks the door itself.
//
// Keys are fetched on first use and cached for Refresh. A token naming a
// kid not in the cache fetches the set again (keys rotate: the node
// publishes a new key before signing with it), at most once per
// MinRefetch. When the set cannot be fetched and none is cached, or the
// cached one is older than Refresh and cannot be renewed, Verify fails
// closed with a *KeysError.
//
// A *Verifier is safe for concurrent use; a fetch runs for one caller
// while the others wait for it.
type Verifier struct {
	cfg VerifierConfig

	mu        sync.Mutex // held across a fetch: callers wait for it
	keys      *tokens.AdmissionKeys
	fetchedAt time.Time // of keys
	triedAt   time.Time // the last fetch, successful or not
	lastErr   error     // of the fetch at triedAt
}

// NewVerifier returns a Verifier of cfg; it fetches nothing until the
// first Verify (call Refresh to fetch at start-up).
func NewVerifier(cfg VerifierConfig) (*Verifier, error) {
	if !strings.HasPrefix(cfg.JWKSURL, "https://") && !strings.HasPrefix(cfg.JWKSURL, "http://") {
		return nil, fmt.Errorf("anteroom: JWKSURL %q: want an http(s) URL", cfg.JWKSURL)
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 5 * time.Minute
	}
	if cfg.MinRefetch <= 0 {
		cfg.MinRefetch = 5 * time.Second
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Verifier{cfg: cfg}, nil
}

// Verify checks raw, an admission token, for event and returns the
// admission it carries. Errors wrap tokens.ErrInvalid (forged, expired,
// not yet valid, another iss or aud, another algorithm, an unknown key,
// malformed; answer 401), tokens.ErrWrongEvent (a valid token of another
// event; 403), or are a *KeysError (no keys: fail closed).
func (v *Verifier) Verify(ctx context.Context, raw, event string) (Admission, error) {
	now := v.cfg.Now()
	keys, err := v.current(ctx, now, "")
	if err != nil {
		return Admission{}, err
	}
	if kid, ok := kidOf(raw); ok && !keys.Has(kid) {
		// A rotation the cache has not seen, or a forged kid: ask again,
		// rate-limited.
		if keys, err = v.current(ctx, now, kid); err != nil {
			return Admission{}, err
		}
	}
	return keys.Verify(raw, event, now)
}

// Refresh fetches the key set now, whatever the cache holds.
func (v *Verifier) Refresh(ctx context.Context) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.fetchLocked(ctx, v.cfg.Now())
}

// current returns keys to verify with at now: the cached set while it is
// fresh and, when kid is not "", holds kid; else a new fetch, unless the
// last one was within MinRefetch.
func (v *Verifier) current(ctx context.Context, now time.Time, kid string) (*tokens.AdmissionKeys, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	fresh := v.keys != nil && now.Sub(v.fetchedAt) < v.cfg.Refresh
	if fresh && (kid == "" || v.keys.Has(kid)) {
		return v.keys, nil
	}
	if !v.triedAt.IsZero() && now.Sub(v.triedAt) < v.cfg.MinRefetch {
		if fresh { // an unknown kid again, too soon: the cache answers
			return v.keys, nil
		}
		if v.lastErr != nil {
			return nil, &KeysError{URL: v.cfg.JWKSURL, Err: v.lastErr}
		}
	}
	if err := v.fetchLocked(ctx, now); err != nil {
		if fresh {
			return v.keys, nil // the cached set still stands; the kid stays unknown
		}
		return nil, err
	}
	return v.keys, nil
}

// fetchLocked fetches and parses the key set; v.mu is held.
func (v *Verifier) fetchLocked(ctx context.Context, now time.Time) error {
	keys, err := v.fetch(ctx)
	if err != nil {
		if ctx.Err() == nil { // the caller giving up says nothing of the keys
			v.triedAt, v.lastErr = now, err
		}
		return &KeysError{URL: v.cfg.JWKSURL, Err: err}
	}
	v.keys, v.fetchedAt, v.triedAt, v.lastErr = keys, now, now, nil
	return nil
}

func (v *Verifier) fetch(ctx context.Context) (*tokens.AdmissionKeys, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.JWKSURL, http.NoBody)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	return tokens.ParseAdmissionKeys(body, tokens.IssuerConfig{Issuer: v.cfg.Issuer, Audience: v.cfg.Audience, Leeway: v.cfg.Leeway})
}

// kidOf reads the kid of a JWT's header; ok is false when there is none
// (the verification then refuses the token).
func kidOf(raw string) (string, bool) {
	h64, _, ok := strings.Cut(raw, ".")
	if !ok || len(h64) > 1024 {
		return "", false
	}
	hb, err := base64.RawURLEncoding.DecodeString(h64)
	if err != nil {
		return "", false
	}
	var h struct {
		Kid string `json:"kid"`
	}
	if json.Unmarshal(hb, &h) != nil || h.Kid == "" {
		return "", false
	}
	return h.Kid, true
}
