package staff

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/anteroom/anteroom/internal/luascript"
)

// Changes that could remove the last admin count the admins and write in
// one script, so two admins demoting or removing each other at the same
// moment cannot both succeed.
var (
	//go:embed setrole.lua
	setRoleLua string
	//go:embed delete.lua
	deleteLua string

	setRoleScript = luascript.New(setRoleLua)
	deleteScript  = luascript.New(deleteLua)
)

// Reply codes of setrole.lua and delete.lua.
const (
	changeDone      = 0
	changeMissing   = 1
	changeLastAdmin = 2
	changeRaced     = 3 // the keys field changed between the read and the script
)

// changeTries bounds how often Delete reads again after a concurrent
// change of the account's keys.
const changeTries = 5

// SetRole changes the role of an account and returns the old one. The
// last admin cannot be demoted (ErrLastAdmin); no such account is
// ErrNotFound.
func (a *Accounts) SetRole(ctx context.Context, name string, role Role) (Role, error) {
	if role.Rank() == 0 {
		return "", fmt.Errorf("staff accounts: invalid role")
	}
	if !ValidName(name) {
		return "", ErrNotFound
	}
	reply, err := setRoleScript.Run(ctx, a.rdb, []string{accountKey(name), adminsKey}, name, string(role)).Slice()
	if err != nil {
		return "", fmt.Errorf("staff accounts: %w", err)
	}
	code, old, err := codeAndText(reply)
	if err != nil {
		return "", err
	}
	switch code {
	case changeMissing:
		return "", ErrNotFound
	case changeLastAdmin:
		return "", ErrLastAdmin
	}
	return Role(old), nil
}

// Delete removes an account and its API keys; the last admin cannot be
// removed (ErrLastAdmin). Its sessions end with it.
func (a *Accounts) Delete(ctx context.Context, name string) (Account, error) {
	for range changeTries {
		acc, err := a.Get(ctx, name)
		if err != nil {
			return Account{}, err
		}
		keys := []string{accountKey(name), accountsKey, adminsKey}
		for _, k := range acc.Keys {
			keys = append(keys, apiKeyKey(k))
		}
		reply, err := deleteScript.Run(ctx, a.rdb, keys, name, strings.Join(acc.Keys, " ")).Slice()
		if err != nil {
			return Account{}, fmt.Errorf("staff accounts: %w", err)
		}
		code, role, err := codeAndText(reply)
		if err != nil {
			return Account{}, err
		}
		switch code {
		case changeDone:
			acc.Role = Role(role)
			return acc, nil
		case changeMissing:
			return Account{}, ErrNotFound
		case changeLastAdmin:
			return Account{}, ErrLastAdmin
		}
	}
	return Account{}, fmt.Errorf("staff accounts: %s's keys kept changing", name)
}

// codeAndText decodes a script reply {code, text, ...}.
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
