package tokens

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Passes sign and verify bypass passes: credentials that staff mint for
// themselves or for testing, which skip an event's queue and are answered
// with an admission token at once. A pass is
//
//	"ps1." id "." expiry (unix s) "." uses "." base64url(HMAC-SHA256(key, "ps1" event id expiry uses))
//
// with key derived from the deployment's ticket secret (as invites are), so
// every node verifies it without state. A pass names its id but not its
// event: it is valid only for the event it was signed for. It names no
// user: whoever holds it may redeem it, as themselves. Verify checks only
// what the signature proves (event, expiry, the number of uses); whether
// the pass is revoked or used up is kept in Redis and checked on redeem
// (admission.Passes).
//
// A Passes is safe for concurrent use.
type Passes struct {
	key []byte
}

// PassHeader is the request header in which a caller presents a bypass
// pass on join (the edge reads it; the package itself knows no HTTP).
const PassHeader = "X-Bypass-Pass"

// MaxPassUses bounds a pass's uses; 0 means unlimited until it expires.
const MaxPassUses = 10000

// ErrPassInvalid is every pass verification failure: forged, malformed,
// for another event or expired. It wraps [ErrInvalid].
var ErrPassInvalid = fmt.Errorf("%w: pass forged, for another event, or expired", ErrInvalid)

// Pass is what a bypass pass's signature proves.
type Pass struct {
	// ID names the pass: 16 lowercase hex digits.
	ID string
	// Event is the one event the pass is valid for.
	Event string
	// ExpiresAt is when the pass stops being valid (whole seconds).
	ExpiresAt time.Time
	// Uses is how many times the pass may be redeemed; 0: unlimited until
	// it expires.
	Uses int
}

// NewPasses returns Passes keyed by secret (the ticket secret, at least
// 32 bytes).
func NewPasses(secret []byte) (*Passes, error) {
	if len(secret) < 32 {
		return nil, errShortSecret
	}
	return &Passes{key: deriveKey(secret, "anteroom pass v1")}, nil
}

// ValidPassID reports whether id has a pass id's form.
func ValidPassID(id string) bool {
	if len(id) != 16 {
		return false
	}
	for i := range len(id) {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (p *Passes) mac(ev, id, exp, uses string) []byte {
	return fieldMAC(p.key, "ps1", ev, id, exp, uses)
}

// Sign returns the pass ps as a string. It fails on an id that is not
// ValidPassID or uses outside 0..MaxPassUses.
func (p *Passes) Sign(ps Pass) (string, error) {
	if !ValidPassID(ps.ID) || ps.Uses < 0 || ps.Uses > MaxPassUses {
		return "", errors.New("tokens: pass id or uses out of range")
	}
	e, u := strconv.FormatInt(ps.ExpiresAt.Unix(), 10), strconv.Itoa(ps.Uses)
	return "ps1." + ps.ID + "." + e + "." + u + "." + signature(p.mac(ps.Event, ps.ID, e, u)), nil
}

// Verify checks that tok is a pass for event ev, unexpired at now, and
// returns it. Every failure is ErrPassInvalid; expired tells a genuine but
// expired pass (which the caller may count) from a forged one.
func (p *Passes) Verify(tok, ev string, now time.Time) (ps Pass, expired bool, err error) {
	if len(tok) > 128 {
		return Pass{}, false, ErrPassInvalid
	}
	rest, ok := strings.CutPrefix(tok, "ps1.")
	if !ok {
		return Pass{}, false, ErrPassInvalid
	}
	f := strings.Split(rest, ".")
	if len(f) != 4 || !ValidPassID(f[0]) {
		return Pass{}, false, ErrPassInvalid
	}
	exp, err1 := strconv.ParseInt(f[1], 10, 64)
	uses, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || strconv.FormatInt(exp, 10) != f[1] || strconv.Itoa(uses) != f[2] || uses < 0 || uses > MaxPassUses {
		return Pass{}, false, ErrPassInvalid
	}
	if !signatureMatches(f[3], p.mac(ev, f[0], f[1], f[2])) {
		return Pass{}, false, ErrPassInvalid
	}
	ps = Pass{ID: f[0], Event: ev, ExpiresAt: time.Unix(exp, 0), Uses: uses}
	if !now.Before(ps.ExpiresAt) {
		return ps, true, ErrPassInvalid
	}
	return ps, false, nil
}
