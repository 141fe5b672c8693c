package limit

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/luascript"
)

//go:embed reserve.lua
var reserveLua string

// ErrTaken is returned by Reserve when another user holds the value.
var ErrTaken = errors.New("limit: held by another user")

// Kinds of reservations.
const (
	// KindSolution binds a solved challenge to the one join that spends
	// it (the "user" is a value of that join alone): a replay finds it
	// held, ErrTaken.
	KindSolution = "solution"
)

// Reservations bind a value to the first user who presents it in an
// event (a solved challenge to the one join that spends it, KindSolution). Each reservation is its
// own key under its own hash tag, written by reserve.lua in one atomic
// call; values are stored hashed. It is safe for concurrent use.
type Reservations struct {
	rdb    redis.Scripter
	script *redis.Script
}

// NewReservations returns Reservations on rdb.
func NewReservations(rdb redis.Scripter) *Reservations {
	return &Reservations{rdb: rdb, script: luascript.New(reserveLua)}
}

// Reserve binds value of kind (KindSolution) in event ev to
// user for ttl. It returns nil when user holds it (newly or from before),
// ErrTaken when another user does, and a wrapped Redis error otherwise.
func (r *Reservations) Reserve(ctx context.Context, kind, ev, value, user string, ttl time.Duration) error {
	key := "ar:{rsv:" + kind + ":" + ev + ":" + digest(value) + "}"
	ok, err := r.script.Run(ctx, r.rdb, []string{key}, user, max(ttl.Milliseconds(), 1)).Int64()
	if err != nil {
		return fmt.Errorf("reserve %s in %s: %w", kind, ev, err)
	}
	if ok != 1 {
		return ErrTaken
	}
	return nil
}
