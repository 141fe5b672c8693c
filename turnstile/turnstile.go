package turnstile

import (
	"context"
	"time"

	"github.com/anteroom/anteroom/tokens"
)

// Issuer signs and verifies admission tokens; *tokens.Issuer.
type Issuer interface {
	Issue(event, user string, pos int64, ttl time.Duration, now time.Time) (string, tokens.Admission, error)
	Verify(raw, event string, now time.Time) (tokens.Admission, error)
}

// View is the node's view of the sales, which the next refresh writes to
// Redis (*sale.Snapshots). Its methods make no Redis call, but Activate.
type View interface {
	// Activate counts position pos of event ev active under max_active
	// until until, in Redis, before the token is handed out (see Admit).
	Activate(ctx context.Context, ev string, pos int64, until time.Time) error
	// PresentAfter marks position pos of event ev present (its holder
	// fetched a token after waiting waited; negative: unknown).
	PresentAfter(ev string, pos int64, waited time.Duration)
	// Session records that the token with id jti holds position pos, so
	// the shop can finish the checkout session by jti.
	Session(ev, jti string, pos int64)
	// ClaimedAfter marks position pos of event ev claimed, waited after
	// its token was issued (negative: unknown).
	ClaimedAfter(ev string, pos int64, waited time.Duration)
}

// Turnstile mints and checks admissions. Its zero value is not usable:
// call New.
type Turnstile struct {
	issuer Issuer
	view   View
	issued func(ev string)
}

// New returns a Turnstile that signs with issuer, records in view and
// calls issued (when not nil) for each admission token it mints, for the
// anteroom_admission_tokens_issued_total metric.
func New(issuer Issuer, view View, issued func(ev string)) *Turnstile {
	if issued == nil {
		issued = func(string) {}
	}
	return &Turnstile{issuer: issuer, view: view, issued: issued}
}

// Verify checks an admission token's signature, lifetime and event: what
// a gateway checks offline with the JWKS, and all a proxy's gate asks. It
// returns the issuer's errors (wrapping tokens.ErrInvalid or
// tokens.ErrWrongEvent). Claims ask Authorize, which checks more.
func (t *Turnstile) Verify(raw, ev string, now time.Time) (tokens.Admission, error) {
	return t.issuer.Verify(raw, ev, now)
}
