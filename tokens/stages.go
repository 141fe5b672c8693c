package tokens

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A rotation without a gap runs in three stages, each a method of KeySet
// run by the operator (`anteroom keys rotate|promote|retire`):
//
//  1. [KeySet.PublishNext] adds the next key: every node publishes it in
//     the JWKS after its next Reload, none signs with it.
//  2. [KeySet.Promote], once every cache of the JWKS (its Cache-Control
//     max-age, plus the nodes' reload interval) holds the next key, makes
//     it the signer. The previous key becomes retiring: still published, no
//     longer signing. A gateway that fetched the JWKS at any moment since
//     then already knows the new kid, so it never refuses a new token.
//  3. [KeySet.Retire], once the retiring key's last token has expired,
//     removes it.
//
// [KeySet.Rotate] runs stages 1 and 2 at once, for a key that must stop
// signing now (a compromised key), accepting that gateways refuse the new
// key's tokens until they fetch the JWKS again.

// Sentinel errors of the rotation stages.
var (
	// ErrNextPending reports a PublishNext while a next key is already
	// published: promote it first.
	ErrNextPending = errors.New("tokens: a next key is already published")

	// ErrNoNext reports a Promote with no next key published.
	ErrNoNext = errors.New("tokens: no next key published")

	// ErrTooSoon reports a Promote before caches of the JWKS can all hold
	// the next key, or a Retire that would remove a key whose tokens may
	// still be valid. The wrapping error names the time left.
	ErrTooSoon = errors.New("tokens: too soon")
)

// Stage is where a key is in a rotation.
type Stage string

// The stages of a key.
const (
	StageNext     Stage = "next"     // published, not signing yet
	StageActive   Stage = "active"   // the signer
	StageRetiring Stage = "retiring" // published, no longer signing
)

// KeyState is one key of a set and its stage. Since is when it entered the
// stage (zero for the active key, and for a retiring key whose record is
// missing: Retire then stamps it).
type KeyState struct {
	Kid   string
	Stage Stage
	Since time.Time
}

// States returns every key of the set with its stage: the active key
// first, then the next key, then the retiring ones sorted by kid.
func (k *KeySet) States() []KeyState {
	snap := k.snap.Load()
	out := []KeyState{{Kid: snap.active, Stage: StageActive}}
	if snap.next != "" {
		out = append(out, KeyState{Kid: snap.next, Stage: StageNext, Since: snap.nextAt})
	}
	for _, kid := range snap.kids {
		if kid != snap.active && kid != snap.next {
			out = append(out, KeyState{Kid: kid, Stage: StageRetiring, Since: snap.inactive[kid]})
		}
	}
	return out
}

// PublishNext adds a new key as the next key (stage 1) and returns its
// kid, recording now as the moment it was published. Nodes publish it in
// the JWKS after their next Reload and keep signing with the active key.
// It returns an error wrapping [ErrNextPending] when a next key is already
// published (two operators at once: exactly one of them succeeds).
func (k *KeySet) PublishNext(now time.Time) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.publishNextLocked(now)
}

func (k *KeySet) publishNextLocked(now time.Time) (string, error) {
	if err := k.reloadLocked(); err != nil {
		return "", err
	}
	if snap := k.snap.Load(); snap.next != "" {
		return "", fmt.Errorf("%w: %s since %s; promote it first", ErrNextPending, snap.next, snap.nextAt.UTC().Format(time.RFC3339))
	}
	// A next file naming the active key is what a crash inside Promote
	// leaves; it is cleared before a new one is written.
	if err := k.clearStaleNext(); err != nil {
		return "", err
	}
	kid, err := generateKey(k.dir)
	if err != nil {
		return "", err
	}
	data := []byte(kid + "\n" + now.UTC().Format(time.RFC3339Nano) + "\n")
	if err := writeFileAtomic(k.dir, nextFile, data, 0o600, true); err != nil {
		_ = os.Remove(filepath.Join(k.dir, kid+pemSuffix))
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("%w (by another process just now)", ErrNextPending)
		}
		return "", fmt.Errorf("tokens: write next key: %w", err)
	}
	return kid, k.reloadLocked()
}

// clearStaleNext removes a next file that names the active key.
func (k *KeySet) clearStaleNext() error {
	next, _, err := readNext(k.dir)
	if err != nil || next == "" || next != k.snap.Load().active {
		return err
	}
	return removeIfExists(filepath.Join(k.dir, nextFile))
}

// Promote makes the next key the signer (stage 2), recording now as the
// moment the previous active key stopped signing, and returns the kids of
// the new and the previous signer. It refuses, with an error wrapping
// [ErrTooSoon] that names the time left, until minAge has passed since the
// next key was published: minAge must cover the longest time a cache may
// keep the JWKS (its Cache-Control max-age) plus the nodes' reload
// interval. With no next key it returns an error wrapping [ErrNoNext].
// Other nodes sign with the new key after their next Reload.
func (k *KeySet) Promote(now time.Time, minAge time.Duration) (kid, previous string, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.promoteLocked(now, minAge)
}

func (k *KeySet) promoteLocked(now time.Time, minAge time.Duration) (kid, previous string, err error) {
	if err := k.reloadLocked(); err != nil {
		return "", "", err
	}
	snap := k.snap.Load()
	if snap.next == "" {
		return "", "", ErrNoNext
	}
	if at := snap.nextAt.Add(minAge); now.Before(at) {
		return "", "", fmt.Errorf("%w: next key %s was published at %s; caches of the JWKS may not hold it until %s (time left %s)",
			ErrTooSoon, snap.next, snap.nextAt.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339), at.Sub(now).Round(time.Second))
	}
	stamp := []byte(now.UTC().Format(time.RFC3339Nano) + "\n")
	if err := writeFileAtomic(k.dir, snap.active+inactiveSuffix, stamp, 0o600, false); err != nil {
		return "", "", fmt.Errorf("tokens: record inactive key: %w", err)
	}
	if err := writeFileAtomic(k.dir, activeFile, []byte(snap.next+"\n"), 0o600, false); err != nil {
		return "", "", fmt.Errorf("tokens: write active key: %w", err)
	}
	if err := removeIfExists(filepath.Join(k.dir, nextFile)); err != nil {
		return "", "", err
	}
	// A record left by an earlier life of the new signer no longer applies.
	if err := removeIfExists(filepath.Join(k.dir, snap.next+inactiveSuffix)); err != nil {
		return "", "", err
	}
	return snap.next, snap.active, k.reloadLocked()
}

// readNext reads the next file of dir: its kid and publication time, or
// "" when there is none.
func readNext(dir string) (string, time.Time, error) {
	data, err := os.ReadFile(filepath.Join(dir, nextFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("tokens: read next key: %w", err)
	}
	lines := strings.Fields(string(data))
	if len(lines) != 2 {
		return "", time.Time{}, fmt.Errorf("tokens: %s/%s: want a kid and a time, one line each", dir, nextFile)
	}
	at, err := time.Parse(time.RFC3339Nano, lines[1])
	if err != nil {
		return "", time.Time{}, fmt.Errorf("tokens: %s/%s: %w", dir, nextFile, err)
	}
	return lines[0], at, nil
}

// retiringKids returns the kids Retire looks at: neither active nor next.
func (s *keySnapshot) retiringKids() []string {
	return slices.DeleteFunc(slices.Clone(s.kids), func(kid string) bool { return kid == s.active || kid == s.next })
}
