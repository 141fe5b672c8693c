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

// Rotate adds a new key to the directory and makes it the active signer,
// recording now as the moment the previous active key stopped signing. It
// returns the new kid. The previous key stays in the set, so tokens it
// signed keep verifying until [KeySet.Retire] removes it.
//
// Rotate first reloads the directory, so the key it deactivates is the one
// active for the whole deployment, not a stale local view. Other nodes start
// signing with the new key after their next [KeySet.Reload].
//
// Gateways that cache the JWKS reject tokens with the new kid until they
// refetch it; rotate well before it is needed, not during a sale.
func (k *KeySet) Rotate(now time.Time) (kid string, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.reloadLocked(); err != nil {
		return "", err
	}
	old := k.snap.Load().active
	kid, err = generateKey(k.dir)
	if err != nil {
		return "", err
	}
	stamp := []byte(now.UTC().Format(time.RFC3339Nano) + "\n")
	if err := writeFileAtomic(k.dir, old+inactiveSuffix, stamp, 0o600, false); err != nil {
		return "", fmt.Errorf("tokens: record inactive key: %w", err)
	}
	if err := writeFileAtomic(k.dir, activeFile, []byte(kid+"\n"), 0o600, false); err != nil {
		return "", fmt.Errorf("tokens: write active key: %w", err)
	}
	return kid, k.reloadLocked()
}

// Retire removes from the directory every non-active key that stopped
// signing more than maxTokenAge before now, and returns their kids, sorted.
// Tokens signed by a removed key fail verification with [ErrInvalid] from
// then on, so maxTokenAge must cover the longest admission token lifetime,
// the verification leeway and the interval at which nodes Reload.
//
// A non-active key with no record of when it stopped signing is kept and
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
	for _, kid := range snap.kids {
		if kid == snap.active {
			continue
		}
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
