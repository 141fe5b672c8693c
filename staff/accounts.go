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
}

// Accounts keeps staff accounts in Redis: a hash per account (role,
// argon2id password hash), the set of names, the set of admin names, and
// per API key a hash of its SHA-256 and owner under its public prefix.
//
//	ar:{staff}:accounts          set of names
//	ar:{staff}:admins            set of admin names
//	ar:{staff}:account:<name>    hash: role, password, keys (space-separated prefixes)
//	ar:{staff}:apikey:<prefix>   hash: account, sha256
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

// Create adds an account with a password hashed by HashPassword. Hashing
// is CPU work, seconds on a busy machine: the caller does it before it
// starts the deadline that ctx puts on the Redis calls.
func (a *Accounts) Create(ctx context.Context, name string, role Role, password Password) error {
	if !ValidName(name) || role.Rank() == 0 || password.hash == "" {
		return fmt.Errorf("staff accounts: invalid name, role or password")
	}
	h := password.hash
	ok, err := a.rdb.HSetNX(ctx, accountKey(name), "role", string(role)).Result()
	if err != nil {
		return fmt.Errorf("staff accounts: %w", err)
	}
	if !ok {
		return ErrExists
	}
	_, err = a.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, accountKey(name), "password", h)
		p.SAdd(ctx, accountsKey, name)
		if role == Admin {
			p.SAdd(ctx, adminsKey, name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("staff accounts: %w", err)
	}
	return nil
}

// Get returns account name.
func (a *Accounts) Get(ctx context.Context, name string) (Account, error) {
	if !ValidName(name) {
		return Account{}, ErrNotFound
	}
	v, err := a.rdb.HMGet(ctx, accountKey(name), "role", "keys").Result()
	if err != nil {
		return Account{}, fmt.Errorf("staff accounts: %w", err)
	}
	role, _ := v[0].(string)
	if role == "" {
		return Account{}, ErrNotFound
	}
	keys, _ := v[1].(string)
	return Account{Name: name, Role: Role(role), Keys: strings.Fields(keys)}, nil
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
	v, err := a.rdb.HMGet(ctx, accountKey(name), "password", "role", "keys").Result()
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
	return Account{Name: name, Role: Role(role), Keys: strings.Fields(keys)}, nil
}

// NewKey mints an API key for account name: "ak_<prefix>_<secret>", shown
// once; only its SHA-256 is kept. It returns the key and its prefix.
func (a *Accounts) NewKey(ctx context.Context, name string) (key, prefix string, err error) {
	acc, err := a.Get(ctx, name)
	if err != nil {
		return "", "", err
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
	keys := strings.Join(append(acc.Keys, prefix), " ")
	_, err = a.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, apiKeyKey(prefix), "account", name, "sha256", hex.EncodeToString(sum[:]))
		p.HSet(ctx, accountKey(name), "keys", keys)
		return nil
	})
	if err != nil {
		return "", "", fmt.Errorf("staff accounts: %w", err)
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
	v, err := a.rdb.HMGet(ctx, apiKeyKey(prefix), "account", "sha256").Result()
	if err != nil {
		return Account{}, fmt.Errorf("staff accounts: %w", err)
	}
	owner, _ := v[0].(string)
	want, _ := v[1].(string)
	sum := sha256.Sum256([]byte(key))
	if owner == "" || subtle.ConstantTimeCompare([]byte(hex.EncodeToString(sum[:])), []byte(want)) != 1 {
		return Account{}, ErrBadLogin
	}
	acc, err := a.Get(ctx, owner)
	if errors.Is(err, ErrNotFound) {
		return Account{}, ErrBadLogin
	}
	return acc, err
}
