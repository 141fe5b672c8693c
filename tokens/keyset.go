package tokens

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Names inside a key directory.
const (
	activeFile     = "active"
	nextFile       = "next"
	pemSuffix      = ".pem"
	inactiveSuffix = ".inactive"
)

// KeySet is the set of Ed25519 keys that sign and verify admission tokens:
// several keys, exactly one active signer, at most one next key (published,
// not signing yet), and retiring keys (published, no longer signing, until
// their last token has expired). See [KeySet.PublishNext] for the stages
// of a rotation without a gap. Every node of a deployment opens
// the same directory (a shared volume, or a mounted secret), so all of them
// verify with the same keys and sign with the same active key. A read-only
// directory (a Kubernetes Secret volume: its ..data entries are skipped like
// any dot file) works for OpenKeyDir and Reload once it holds an active key;
// PublishNext, Promote, Rotate and Retire need write access.
//
// # Directory format
//
//	<kid>.pem        the private key: PEM "PRIVATE KEY" (PKCS #8) of an
//	                 Ed25519 key, mode 0600. <kid> is the RFC 7638 JWK
//	                 thumbprint of its public key (43 base64url characters);
//	                 a file whose name does not match its key is an error.
//	active           the kid of the signer, one line.
//	next             the kid of the next key, then the RFC 3339 time it was
//	                 added, one line each. Written by PublishNext (never
//	                 overwritten), removed by Promote. A next file naming the
//	                 active key (a crash inside Promote) is ignored.
//	<kid>.inactive   RFC 3339 time at which <kid> stopped being the active
//	                 signer, one line. Written by Promote for the key it
//	                 replaces; Retire counts a key's age from it.
//	.tmp-*           temporary files, ignored.
//
// Every file is written to a temp file and renamed into place, so a reader
// on another node sees either the old or the new content. A new key file is
// complete before active names it. The directory is created with mode 0700.
//
// A key neither active nor next without an .inactive record (a crash
// inside PublishNext or Promote) is not removed by the first Retire
// that sees it: that Retire records "inactive since now" instead, which is
// the safe bound.
//
// # Concurrency
//
// Readers (Issuer.Issue, Issuer.Verify, JWKS) load an immutable snapshot
// through an atomic pointer and never block. PublishNext, Promote, Rotate,
// Retire and Reload build a new snapshot from the directory and swap it in;
// they are serialized within the process, and PublishNext across processes
// (one next key at a time). A node sees another node's change after its own
// Reload, so call Reload periodically (every few seconds) and pick a
// Retire maxTokenAge that covers the longest token lifetime plus that reload
// interval plus the verification leeway.
//
// A *KeySet is safe for concurrent use. The zero value is not usable; call
// [OpenKeyDir].
type KeySet struct {
	dir  string
	mu   sync.Mutex // serializes the changes and Reload
	snap atomic.Pointer[keySnapshot]
}

// keySnapshot is one immutable view of the directory.
type keySnapshot struct {
	active   string
	next     string    // "" = none
	nextAt   time.Time // when next was published
	signer   ed25519.PrivateKey
	pubs     map[string]ed25519.PublicKey
	verify   map[string]*verifyKey // per kid, precomputed from pubs
	inactive map[string]time.Time  // when non-active keys stopped signing, if recorded
	kids     []string              // active first, then the others sorted
	jwks     []byte
}

// errNoActive is returned by loadKeyDir when the directory has no active file.
var errNoActive = errors.New("tokens: key directory has no active key")

// OpenKeyDir opens the key directory dir. If dir is missing, empty or has no
// active key yet, it is created (mode 0700) and a first key is generated and
// made active; when several nodes do this at once, exactly one key becomes
// active and all of them use it. Unreadable or inconsistent content (a
// malformed key, a file name that is not its key's kid, an active kid
// without its key) is an error.
func OpenKeyDir(dir string) (*KeySet, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("tokens: create key directory: %w", err)
	}
	snap, err := loadKeyDir(dir)
	if errors.Is(err, errNoActive) {
		kid, genErr := generateKey(dir)
		if genErr != nil {
			return nil, genErr
		}
		err = writeFileAtomic(dir, activeFile, []byte(kid+"\n"), 0o600, true)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("tokens: write active key: %w", err)
		}
		// Ours, or the one another node made active first.
		snap, err = loadKeyDir(dir)
	}
	if err != nil {
		return nil, err
	}
	k := &KeySet{dir: dir}
	k.snap.Store(snap)
	return k, nil
}

// Reload re-reads the directory, picking up keys rotated or retired by other
// nodes. On error the previous keys stay in use.
func (k *KeySet) Reload() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reloadLocked()
}

func (k *KeySet) reloadLocked() error {
	snap, err := loadKeyDir(k.dir)
	if err != nil {
		return err
	}
	k.snap.Store(snap)
	return nil
}

// JWKS returns the public keys as an RFC 7517 JWK Set, active key first:
//
//	{"keys":[{"kty":"OKP","crv":"Ed25519","x":"...","kid":"...","alg":"EdDSA","use":"sig"}]}
//
// The caller may modify the returned slice.
func (k *KeySet) JWKS() []byte { return slices.Clone(k.snap.Load().jwks) }

// Active returns the kid of the key that signs new tokens.
func (k *KeySet) Active() string { return k.snap.Load().active }

// Kids returns the kids of all keys in the set, active first.
func (k *KeySet) Kids() []string { return slices.Clone(k.snap.Load().kids) }

// generateKey writes a new random key into dir and returns its kid.
func generateKey(dir string) (string, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("tokens: generate key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", fmt.Errorf("tokens: encode key: %w", err)
	}
	kid := thumbprint(pub)
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := writeFileAtomic(dir, kid+pemSuffix, data, 0o600, true); err != nil {
		return "", fmt.Errorf("tokens: write key: %w", err)
	}
	return kid, nil
}

// loadKeyDir reads dir into a snapshot. Files that vanish while it reads
// (another node retiring a key) are skipped.
//
// The active file is read before the listing: a key file is complete before
// active names it and an active key is never removed, so the listing that
// follows always holds the key active named, even while another node
// rotates or makes the first key (reading it after the listing could name a
// key written in between).
func loadKeyDir(dir string) (*keySnapshot, error) {
	data, err := os.ReadFile(filepath.Join(dir, activeFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoActive
	}
	if err != nil {
		return nil, fmt.Errorf("tokens: read active key: %w", err)
	}
	active := strings.TrimSpace(string(data))
	next, nextAt, err := readNext(dir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("tokens: read key directory: %w", err)
	}
	snap := &keySnapshot{
		active:   active,
		pubs:     make(map[string]ed25519.PublicKey),
		inactive: make(map[string]time.Time),
	}
	privs := make(map[string]ed25519.PrivateKey)
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || e.IsDir() {
			continue
		}
		switch {
		case strings.HasSuffix(name, pemSuffix):
			kid := strings.TrimSuffix(name, pemSuffix)
			priv, err := readKey(filepath.Join(dir, name), kid)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			privs[kid] = priv
			snap.pubs[kid] = priv.Public().(ed25519.PublicKey)
		case strings.HasSuffix(name, inactiveSuffix):
			kid := strings.TrimSuffix(name, inactiveSuffix)
			data, err := os.ReadFile(filepath.Join(dir, name))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("tokens: read %s: %w", name, err)
			}
			t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(data)))
			if err != nil {
				return nil, fmt.Errorf("tokens: %s: %w", name, err)
			}
			snap.inactive[kid] = t
		}
	}
	snap.signer = privs[snap.active]
	if snap.signer == nil {
		return nil, fmt.Errorf("tokens: active key %q has no %s file in %s", snap.active, pemSuffix, dir)
	}
	if next != "" && next != active {
		if _, ok := privs[next]; !ok {
			return nil, fmt.Errorf("tokens: next key %q has no %s file in %s", next, pemSuffix, dir)
		}
		snap.next, snap.nextAt = next, nextAt
	}
	for kid := range snap.pubs {
		if kid != snap.active {
			snap.kids = append(snap.kids, kid)
		}
	}
	slices.Sort(snap.kids)
	snap.kids = slices.Insert(snap.kids, 0, snap.active)
	if snap.jwks, err = encodeJWKS(snap.kids, snap.pubs); err != nil {
		return nil, err
	}
	if snap.verify, err = newVerifyKeys(snap.pubs, privs); err != nil {
		return nil, err
	}
	return snap, nil
}

// readKey reads one PKCS #8 Ed25519 key and checks that its file is named
// after its kid.
func readKey(path, kid string) (ed25519.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokens: read key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("tokens: %s: no PEM PRIVATE KEY block", path)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("tokens: %s: %w", path, err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("tokens: %s: %T is not an Ed25519 key", path, key)
	}
	if got := thumbprint(priv.Public().(ed25519.PublicKey)); got != kid {
		return nil, fmt.Errorf("tokens: %s: key thumbprint is %s, not the file name", path, got)
	}
	return priv, nil
}
