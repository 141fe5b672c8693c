package staff

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrLinkSpent is the answer to a sign-in link that was used already, has
// expired or never existed: which of the three is not told.
var ErrLinkSpent = errors.New("staff: the sign-in link was used, has expired or is unknown")

// linkPrefix starts the key of one pending sign-in link; the rest is the
// SHA-256 of its token, so Redis never holds a token that signs in.
const linkPrefix = "ar:{staff}:signin:"

// linkTokenLen is a link token's length: 32 random bytes, unpadded
// base64url.
const linkTokenLen = 43

// SignInLinks are one-time console sign-in links, kept in Redis beside the
// console sessions: a link names one account (and its incarnation, so a
// password or role change ends it as it ends sessions), expires on Redis's
// clock (PX) and is spent by the first Redeem on any node (GETDEL: two
// concurrent redemptions cannot both succeed).
//
// Only the demo command makes them (internal/node's Config.DemoSignIn):
// no setting of a node turns them on.
//
// A *SignInLinks is safe for concurrent use.
type SignInLinks struct {
	rdb redis.Cmdable
}

// NewSignInLinks returns the sign-in links kept in rdb.
func NewSignInLinks(rdb redis.Cmdable) *SignInLinks { return &SignInLinks{rdb: rdb} }

// Mint makes a link token that signs acc in once within ttl.
func (l *SignInLinks) Mint(ctx context.Context, acc Account, ttl time.Duration) (string, error) {
	if !ValidName(acc.Name) || strings.ContainsRune(acc.Gen, ' ') || ttl <= 0 {
		return "", fmt.Errorf("staff sign-in link: no link for account %q valid %s", acc.Name, ttl)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	if err := l.rdb.Set(ctx, linkKey(tok), acc.Gen+" "+acc.Name, ttl).Err(); err != nil {
		return "", fmt.Errorf("staff sign-in link: %w", err)
	}
	return tok, nil
}

// Redeem spends token and returns the account it names (Name and Gen, the
// incarnation it was minted for: the caller checks it is still the
// account's). A token used before, expired or malformed is ErrLinkSpent.
func (l *SignInLinks) Redeem(ctx context.Context, token string) (Account, error) {
	if len(token) != linkTokenLen {
		return Account{}, ErrLinkSpent
	}
	v, err := l.rdb.GetDel(ctx, linkKey(token)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return Account{}, ErrLinkSpent
	case err != nil:
		return Account{}, fmt.Errorf("staff sign-in link: %w", err)
	}
	gen, name, ok := strings.Cut(v, " ")
	if !ok || !ValidName(name) {
		return Account{}, ErrLinkSpent
	}
	return Account{Name: name, Gen: gen}, nil
}

func linkKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return linkPrefix + hex.EncodeToString(sum[:])
}
