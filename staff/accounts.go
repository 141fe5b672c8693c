package staff

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Role is what a staff account may do; each role may do everything the
// roles below it may.
type Role string

// The roles, lowest first.
const (
	Viewer   Role = "viewer"
	Operator Role = "operator"
	Admin    Role = "admin"
)

// Rank orders roles: 0 for an unknown one.
func (r Role) Rank() int {
	switch r {
	case Viewer:
		return 1
	case Operator:
		return 2
	case Admin:
		return 3
	}
	return 0
}

// Sentinel errors of accounts.
var (
	ErrNotFound  = errors.New("staff: no such account or key")
	ErrExists    = errors.New("staff: the account exists")
	ErrBadLogin  = errors.New("staff: wrong name, password or key")
	ErrLastAdmin = errors.New("staff: the last admin account cannot be removed or demoted")
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,31}$`)

// ValidName reports whether name may name an account: 1 to 32 characters
// of a-z 0-9 _ . - starting with a letter or digit.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// Account is one named staff account (never its password hash).
type Account struct {
	Name string `json:"name"`
	Role Role   `json:"role"`
	// Keys are the prefixes of its API keys.
	Keys []string `json:"api_keys"`
	// Gen is the account's incarnation: set when it is created and
	// replaced when its password or role changes. Sessions and API keys
	// are valid only while it is the one they were made for; a deleted
	// and re-created name has a new one. Empty for an account made
	// before incarnations were kept.
	Gen string `json:"-"`
}

// Accounts keeps staff accounts in Redis: a hash per account (role,
// argon2id password hash), the set of names, the set of admin names, and
// per API key a hash of its SHA-256 and owner under its public prefix.
//
//	ar:{staff}:accounts          set of names
//	ar:{staff}:admins            set of admin names
//	ar:{staff}:account:<name>    hash: role, password, keys (space-separated prefixes), gen
//	ar:{staff}:apikey:<prefix>   hash: account, sha256, gen
//
// A *Accounts is safe for concurrent use.
type Accounts struct {
	rdb redis.UniversalClient
}

// NewAccounts returns the accounts kept in rdb.
func NewAccounts(rdb redis.UniversalClient) *Accounts { return &Accounts{rdb: rdb} }

const (
	accountsKey = "ar:{staff}:accounts"
	adminsKey   = "ar:{staff}:admins"
)

func accountKey(name string) string  { return "ar:{staff}:account:" + name }
func apiKeyKey(prefix string) string { return "ar:{staff}:apikey:" + prefix }

// HasAdmin reports whether any admin account exists.
func (a *Accounts) HasAdmin(ctx context.Context) (bool, error) {
	n, err := a.rdb.SCard(ctx, adminsKey).Result()
	if err != nil {
		return false, fmt.Errorf("staff accounts: %w", err)
	}
	return n > 0, nil
}

// Get returns account name.
func (a *Accounts) Get(ctx context.Context, name string) (Account, error) {
	if !ValidName(name) {
		return Account{}, ErrNotFound
	}
	v, err := a.rdb.HMGet(ctx, accountKey(name), "role", "keys", "gen").Result()
	if err != nil {
		return Account{}, fmt.Errorf("staff accounts: %w", err)
	}
	role, _ := v[0].(string)
	if role == "" {
		return Account{}, ErrNotFound
	}
	keys, _ := v[1].(string)
	gen, _ := v[2].(string)
	return Account{Name: name, Role: Role(role), Keys: strings.Fields(keys), Gen: gen}, nil
}

// List returns every account, by name.
func (a *Accounts) List(ctx context.Context) ([]Account, error) {
	names, err := a.rdb.SMembers(ctx, accountsKey).Result()
	if err != nil {
		return nil, fmt.Errorf("staff accounts: %w", err)
	}
	sort.Strings(names)
	out := make([]Account, 0, len(names))
	for _, n := range names {
		acc, err := a.Get(ctx, n)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, acc)
	}
	return out, nil
}

// SignIn checks name and password; ErrBadLogin when either is wrong. It
// reads the account in one call before it checks the password, so the
// check (CPU work, seconds on a busy machine) never eats into ctx's
// deadline for a Redis call after it.
func (a *Accounts) SignIn(ctx context.Context, name, password string) (Account, error) {
	if !ValidName(name) {
		return Account{}, ErrBadLogin
	}
	v, err := a.rdb.HMGet(ctx, accountKey(name), "password", "role", "keys", "gen").Result()
	if err != nil {
		return Account{}, fmt.Errorf("staff accounts: %w", err)
	}
	h, _ := v[0].(string)
	role, _ := v[1].(string)
	if h == "" || role == "" {
		checkPassword(dummyHash, password) // the same work as for a real account
		return Account{}, ErrBadLogin
	}
	if !checkPassword(h, password) {
		return Account{}, ErrBadLogin
	}
	keys, _ := v[2].(string)
	gen, _ := v[3].(string)
	return Account{Name: name, Role: Role(role), Keys: strings.Fields(keys), Gen: gen}, nil
}

// NewKey mints an API key for account name: "ak_<prefix>_<secret>", shown
// once; only its SHA-256 is kept, with the account's incarnation (the key
// ends when the account's role or password changes, or it is deleted). It
// returns the key and its prefix.
func (a *Accounts) NewKey(ctx context.Context, name string) (key, prefix string, err error) {
	if !ValidName(name) {
		return "", "", ErrNotFound
	}
	var p [6]byte
	var secret [32]byte
	if _, err := rand.Read(p[:]); err != nil {
		return "", "", err
	}
	if _, err := rand.Read(secret[:]); err != nil {
		return "", "", err
	}
	prefix = hex.EncodeToString(p[:])
	key = "ak_" + prefix + "_" + base64.RawURLEncoding.EncodeToString(secret[:])
	sum := sha256.Sum256([]byte(key))
	n, err := newKeyScript.Run(ctx, a.rdb, []string{accountKey(name), apiKeyKey(prefix)}, name, prefix, hex.EncodeToString(sum[:])).Int()
	if err != nil {
		return "", "", fmt.Errorf("staff accounts: %w", err)
	}
	if n == 0 {
		return "", "", ErrNotFound
	}
	return key, prefix, nil
}

// RevokeKey removes the API key with prefix and returns its account.
func (a *Accounts) RevokeKey(ctx context.Context, prefix string) (string, error) {
	owner, err := a.rdb.HGet(ctx, apiKeyKey(prefix), "account").Result()
	if errors.Is(err, redis.Nil) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("staff accounts: %w", err)
	}
	acc, err := a.Get(ctx, owner)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return "", err
	}
	var keep []string
	for _, k := range acc.Keys {
		if k != prefix {
			keep = append(keep, k)
		}
	}
	_, err = a.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, apiKeyKey(prefix))
		if acc.Name != "" {
			p.HSet(ctx, accountKey(owner), "keys", strings.Join(keep, " "))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("staff accounts: %w", err)
	}
	return owner, nil
}

// CheckKey returns the account of an API key; ErrBadLogin when it is not
// one.
func (a *Accounts) CheckKey(ctx context.Context, key string) (Account, error) {
	rest, ok := strings.CutPrefix(key, "ak_")
	prefix, _, ok2 := strings.Cut(rest, "_")
	if !ok || !ok2 || len(prefix) != 12 || len(key) > 100 {
		return Account{}, ErrBadLogin
	}
	v, err := a.rdb.HMGet(ctx, apiKeyKey(prefix), "account", "sha256", "gen").Result()
	if err != nil {
		return Account{}, fmt.Errorf("staff accounts: %w", err)
	}
	owner, _ := v[0].(string)
	want, _ := v[1].(string)
	gen, _ := v[2].(string)
	sum := sha256.Sum256([]byte(key))
	if owner == "" || subtle.ConstantTimeCompare([]byte(hex.EncodeToString(sum[:])), []byte(want)) != 1 {
		return Account{}, ErrBadLogin
	}
	acc, err := a.Get(ctx, owner)
	if errors.Is(err, ErrNotFound) || err == nil && acc.Gen != gen {
		return Account{}, ErrBadLogin // of a deleted account, or of one changed since
	}
	return acc, err
}
