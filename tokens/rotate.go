package tokens

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Rotate makes a new key the active signer at once, recording now as the
// moment the previous active key stopped signing, and returns the new
// kid: stages 1 and 2 of a rotation with no wait between them (a next key
// already published is promoted instead of a new one). The previous key
// stays in the set, so tokens it signed keep verifying until
// [KeySet.Retire] removes it.
//
// Gateways that cached the JWKS refuse tokens of the new kid until they
// fetch it again: use Rotate only when the active key must stop signing
// now (it leaked); otherwise run [KeySet.PublishNext] and, after the
// JWKS cache age, [KeySet.Promote]. Rotate reloads the directory first;
// other nodes sign with the new key after their next [KeySet.Reload].
func (k *KeySet) Rotate(now time.Time) (kid string, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.reloadLocked(); err != nil {
		return "", err
	}
	if k.snap.Load().next == "" {
		if _, err := k.publishNextLocked(now); err != nil {
			return "", err
		}
	}
	kid, _, err = k.promoteLocked(now, 0)
	return kid, err
}

// Retire (stage 3) removes from the directory every retiring key that stopped
// signing more than maxTokenAge before now, and returns their kids, sorted.
// Tokens signed by a removed key fail verification with [ErrInvalid] from
// then on, so maxTokenAge must cover the longest admission token lifetime,
// the verification leeway and the interval at which nodes Reload.
//
// The active and the next key are never removed. A retiring key with no
// record of when it stopped signing is kept and
// stamped with now, so it is removed by a later Retire. Retire reloads the
// directory first; other nodes drop the removed keys on their next Reload.
// maxTokenAge must be positive.
func (k *KeySet) Retire(now time.Time, maxTokenAge time.Duration) ([]string, error) {
	if maxTokenAge <= 0 {
		return nil, fmt.Errorf("tokens: retire: maxTokenAge %v, want > 0", maxTokenAge)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.reloadLocked(); err != nil {
		return nil, err
	}
	snap := k.snap.Load()
	var removed []string
	for _, kid := range snap.retiringKids() {
		since, ok := snap.inactive[kid]
		if !ok {
			stamp := []byte(now.UTC().Format(time.RFC3339Nano) + "\n")
			if err := writeFileAtomic(k.dir, kid+inactiveSuffix, stamp, 0o600, false); err != nil {
				return removed, fmt.Errorf("tokens: record inactive key: %w", err)
			}
			continue
		}
		if now.Sub(since) <= maxTokenAge {
			continue
		}
		if err := removeIfExists(filepath.Join(k.dir, kid+pemSuffix)); err != nil {
			return removed, err
		}
		removed = append(removed, kid)
	}
	// Records left behind by keys already gone (ours now, or a crash).
	for kid := range snap.inactive {
		if _, ok := snap.pubs[kid]; !ok || slices.Contains(removed, kid) {
			if err := removeIfExists(filepath.Join(k.dir, kid+inactiveSuffix)); err != nil {
				return removed, err
			}
		}
	}
	slices.Sort(removed)
	return removed, k.reloadLocked()
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("tokens: %w", err)
	}
	return nil
}
