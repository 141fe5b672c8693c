package staff

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/luascript"
)

// Every change of an account is one script. A change that could remove
// the last admin counts the admins and writes in the same step, so two
// admins demoting or removing each other at the same moment cannot both
// succeed. A change of role or password gives the account a new
// incarnation (gen): sessions and API keys are bound to the incarnation
// they were made for, so they end with it, and its API keys are removed.
var (
	//go:embed create.lua
	createLua string
	//go:embed setrole.lua
	setRoleLua string
	//go:embed delete.lua
	deleteLua string
	//go:embed password.lua
	passwordLua string
	//go:embed newkey.lua
	newKeyLua string

	createScript   = luascript.New(createLua)
	setRoleScript  = luascript.New(setRoleLua)
	deleteScript   = luascript.New(deleteLua)
	passwordScript = luascript.New(passwordLua)
	newKeyScript   = luascript.New(newKeyLua)
)

// ErrStale: the account changed (its password or role) after the caller
// read it; the caller's session has ended.
var ErrStale = errors.New("staff: the account changed since it was read")

// Reply codes of the change scripts.
const (
	changeDone      = 0
	changeMissing   = 1
	changeLastAdmin = 2
	changeRaced     = 3 // the keys field changed between the read and the script
	changeStale     = 4 // the incarnation is not the caller's
)

// changeTries bounds how often a change reads the account again after a
// concurrent change of its keys.
const changeTries = 5

// newGen returns a fresh incarnation: 16 random bytes, base64url (no
// dots, so it fits in a session cookie).
func newGen() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Create adds an account with a password hashed by HashPassword, and a
// new incarnation. Hashing is CPU work, seconds on a busy machine: the
// caller does it before it starts the deadline that ctx puts on the Redis
// calls.
func (a *Accounts) Create(ctx context.Context, name string, role Role, password Password) error {
	if !ValidName(name) || role.Rank() == 0 || password.hash == "" {
		return fmt.Errorf("staff accounts: invalid name, role or password")
	}
	gen, err := newGen()
	if err != nil {
		return err
	}
	n, err := createScript.Run(ctx, a.rdb, []string{accountKey(name), accountsKey, adminsKey}, name, string(role), password.hash, gen).Int()
	if err != nil {
		return fmt.Errorf("staff accounts: %w", err)
	}
	if n == 0 {
		return ErrExists
	}
	return nil
}

// SetRole changes the role of an account and returns the old one. A new
// role ends the account's sessions and API keys. The last admin cannot be
// demoted (ErrLastAdmin); no such account is ErrNotFound.
func (a *Accounts) SetRole(ctx context.Context, name string, role Role) (Role, error) {
	if role.Rank() == 0 {
		return "", fmt.Errorf("staff accounts: invalid role")
	}
	gen, err := newGen()
	if err != nil {
		return "", err
	}
	_, old, err := a.change(ctx, name, setRoleScript, string(role), gen)
	return Role(old), err
}

// Delete removes an account and its API keys; the last admin cannot be
// removed (ErrLastAdmin). Its sessions end with it.
func (a *Accounts) Delete(ctx context.Context, name string) (Account, error) {
	acc, role, err := a.change(ctx, name, deleteScript)
	acc.Role = Role(role)
	return acc, err
}

// ChangePassword sets the password of account name, which the caller
// knows as incarnation was (Account.Gen of its sign-in), and returns the
// new incarnation: every session and API key of the account ends but
// those the caller moves to the new one. ErrStale when the account
// changed since.
func (a *Accounts) ChangePassword(ctx context.Context, name string, password Password, was string) (string, error) {
	return a.setPassword(ctx, name, password, was)
}

// ResetPassword sets the password of account name whatever its
// incarnation (an admin's reset): every session and API key of the
// account ends.
func (a *Accounts) ResetPassword(ctx context.Context, name string, password Password) error {
	_, err := a.setPassword(ctx, name, password, "*")
	return err
}

func (a *Accounts) setPassword(ctx context.Context, name string, password Password, was string) (string, error) {
	if password.hash == "" {
		return "", fmt.Errorf("staff accounts: invalid password")
	}
	gen, err := newGen()
	if err != nil {
		return "", err
	}
	_, _, err = a.change(ctx, name, passwordScript, password.hash, gen, was)
	return gen, err
}

// change runs a change script on account name: KEYS are the account, the
// sets of names and of admins, then its API keys; ARGV its name, its keys
// field as read, then args. It reads again when the keys changed between
// the read and the script. It returns the account as read and the
// script's text reply.
func (a *Accounts) change(ctx context.Context, name string, script *redis.Script, args ...any) (Account, string, error) {
	for range changeTries {
		acc, err := a.Get(ctx, name)
		if err != nil {
			return Account{}, "", err
		}
		keys := []string{accountKey(name), accountsKey, adminsKey}
		for _, k := range acc.Keys {
			keys = append(keys, apiKeyKey(k))
		}
		argv := append([]any{name, strings.Join(acc.Keys, " ")}, args...)
		reply, err := script.Run(ctx, a.rdb, keys, argv...).Slice()
		if err != nil {
			return Account{}, "", fmt.Errorf("staff accounts: %w", err)
		}
		code, text, err := codeAndText(reply)
		if err != nil {
			return Account{}, "", err
		}
		switch code {
		case changeDone:
			return acc, text, nil
		case changeMissing:
			return Account{}, "", ErrNotFound
		case changeLastAdmin:
			return Account{}, "", ErrLastAdmin
		case changeStale:
			return Account{}, "", ErrStale
		}
	}
	return Account{}, "", fmt.Errorf("staff accounts: %s's keys kept changing", name)
}

// codeAndText decodes a script reply {code, text}.
func codeAndText(reply []any) (int64, string, error) {
	if len(reply) < 2 {
		return 0, "", fmt.Errorf("staff accounts: reply %v", reply)
	}
	code, ok1 := reply[0].(int64)
	text, ok2 := reply[1].(string)
	if !ok1 || !ok2 {
		return 0, "", fmt.Errorf("staff accounts: reply %v", reply)
	}
	return code, text, nil
}
