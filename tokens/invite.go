package tokens

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Invites sign and verify enqueue tokens for invite-only (pre-registered)
// events and for lanes (event.Lane):
//
//	"inv1." expiry (unix seconds) "." base64url(HMAC-SHA256(key, "inv1" event user expiry))
//	"inv2." expiry "." lane "." base64url(HMAC-SHA256(key, "inv2" event user expiry lane))
//
// The second form also puts its holder in the named lane; the lane is
// signed, so nobody moves an invite to another lane.
//
// with key derived from the deployment's ticket secret, so every node
// verifies what `anteroom invite` signed. A token names neither its event
// nor its user: it is only valid for the event and user it was signed for,
// and the caller's identity supplies the user. Another user, another event,
// a changed expiry or an expired token are refused. Replay by the same
// user is harmless: join is idempotent and returns that user's one ticket.
//
// An Invites is safe for concurrent use.
type Invites struct {
	key []byte
}

// InviteHeader is the request header in which a caller presents an invite
// on join (the edge reads it; the package itself knows no HTTP).
const InviteHeader = "X-Invite-Token"

// Invite errors. ErrInviteInvalid wraps [ErrInvalid], as every
// verification failure of this package does.
var (
	ErrInviteInvalid = fmt.Errorf("%w: invite for someone else, another event, or expired", ErrInvalid)
	errShortSecret   = errors.New("tokens: the invite secret must be at least 32 bytes")
)

// NewInvites returns Invites keyed by secret (the ticket secret, at least
// 32 bytes).
func NewInvites(secret []byte) (*Invites, error) {
	if len(secret) < 32 {
		return nil, errShortSecret
	}
	return &Invites{key: deriveKey(secret, "anteroom invite v1")}, nil
}

func (v *Invites) mac(ev, user, exp string) []byte {
	return fieldMAC(v.key, "inv1", ev, user, exp)
}

func (v *Invites) macLane(ev, user, exp, lane string) []byte {
	return fieldMAC(v.key, "inv2", ev, user, exp, lane)
}

// Sign returns the invite of user to event ev, valid until exp.
func (v *Invites) Sign(ev, user string, exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 10)
	return "inv1." + e + "." + signature(v.mac(ev, user, e))
}

// SignLane returns the invite of user to lane of event ev, valid until
// exp. lane is a lane name (at most 32 characters, no '.'); "" signs the
// plain invite Sign does.
func (v *Invites) SignLane(ev, user, lane string, exp time.Time) string {
	if lane == "" {
		return v.Sign(ev, user, exp)
	}
	e := strconv.FormatInt(exp.Unix(), 10)
	return "inv2." + e + "." + lane + "." + signature(v.macLane(ev, user, e, lane))
}

// Verify checks that tok invites user to ev at now. Every failure is
// ErrInviteInvalid.
func (v *Invites) Verify(tok, ev, user string, now time.Time) error {
	_, err := v.VerifyLane(tok, ev, user, now)
	return err
}

// VerifyLane checks that tok invites user to ev at now and returns the
// lane it names ("" for a plain invite). Every failure is
// ErrInviteInvalid.
func (v *Invites) VerifyLane(tok, ev, user string, now time.Time) (string, error) {
	if len(tok) > 128 {
		return "", ErrInviteInvalid
	}
	var f []string
	if rest, ok := strings.CutPrefix(tok, "inv1."); ok {
		f = strings.Split(rest, ".")
		if len(f) != 2 {
			return "", ErrInviteInvalid
		}
		f = []string{f[0], "", f[1]}
	} else if rest, ok := strings.CutPrefix(tok, "inv2."); ok {
		if f = strings.Split(rest, "."); len(f) != 3 || f[1] == "" || len(f[1]) > 32 {
			return "", ErrInviteInvalid
		}
	} else {
		return "", ErrInviteInvalid
	}
	e, lane, sig := f[0], f[1], f[2]
	exp, err := strconv.ParseInt(e, 10, 64)
	if err != nil || strconv.FormatInt(exp, 10) != e {
		return "", ErrInviteInvalid
	}
	want := v.mac(ev, user, e)
	if lane != "" {
		want = v.macLane(ev, user, e, lane)
	}
	if !signatureMatches(sig, want) {
		return "", ErrInviteInvalid
	}
	if !now.Before(time.Unix(exp, 0)) {
		return "", ErrInviteInvalid
	}
	return lane, nil
}
