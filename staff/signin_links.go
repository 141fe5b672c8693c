package staff

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
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
// password or role change ends it as it ends sessions), carries its
// expiry (checked against the caller's now, the node's clock on Redis
// TIME; the key also expires by PX, for a Redis that keeps time: the
// embedded one does not) and is spent by the first Redeem on any node
// (GETDEL: two concurrent redemptions cannot both succeed).
//
// Only the demo command makes them (internal/node's
// Config.DemoSignInLinks): no setting of a node turns them on.
//
// A *SignInLinks is safe for concurrent use.
type SignInLinks struct {
	rdb redis.Cmdable
}

// NewSignInLinks returns the sign-in links kept in rdb.
func NewSignInLinks(rdb redis.Cmdable) *SignInLinks { return &SignInLinks{rdb: rdb} }

// Mint makes a link token that signs acc in once, until ttl after now.
func (l *SignInLinks) Mint(ctx context.Context, acc Account, now time.Time, ttl time.Duration) (string, error) {
	if !ValidName(acc.Name) || strings.ContainsRune(acc.Gen, ' ') || ttl <= 0 {
		return "", fmt.Errorf("staff sign-in link: no link for account %q valid %s", acc.Name, ttl)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	v := strconv.FormatInt(now.Add(ttl).UnixMilli(), 10) + " " + acc.Gen + " " + acc.Name
	if err := l.rdb.Set(ctx, linkKey(tok), v, ttl).Err(); err != nil {
		return "", fmt.Errorf("staff sign-in link: %w", err)
	}
	return tok, nil
}

// Redeem spends token and returns the account it names (Name and Gen, the
// incarnation it was minted for: the caller checks it is still the
// account's). A token used before, expired at now, unknown or malformed
// is ErrLinkSpent.
func (l *SignInLinks) Redeem(ctx context.Context, token string, now time.Time) (Account, error) {
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
	parts := strings.SplitN(v, " ", 3)
	if len(parts) != 3 || !ValidName(parts[2]) {
		return Account{}, ErrLinkSpent
	}
	exp, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || now.UnixMilli() >= exp {
		return Account{}, ErrLinkSpent
	}
	return Account{Name: parts[2], Gen: parts[1]}, nil
}

func linkKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return linkPrefix + hex.EncodeToString(sum[:])
}
