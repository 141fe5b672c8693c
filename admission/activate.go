package admission

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/anteroom/anteroom/queue"
)

//go:embed activate.lua
var activateLua string

// Activate counts position pos of event ev active under max_active until
// until (its admission token's expiry), in Redis, at once (activate.lua).
// Whoever mints an admission token of a sale with max_active calls it
// before handing the token out: the presence mark the next tick writes is
// kept in the node's memory until then, and a node killed meanwhile would
// leave the position a no-show after the grace, its place given to
// someone else while the token stays valid. One Redis round trip per
// token minted, never per waiting poll. A position of another lane than
// the default (queue.Laned) or PassPosition is no business of max_active:
// nothing is written. A finished position stays finished.
func (f *Frontier) Activate(ctx context.Context, ev string, pos int64, until time.Time) error {
	if lane, _ := queue.Unlane(pos); lane != 0 || pos <= 0 {
		return nil
	}
	if err := f.activate.Run(ctx, f.rdb, []string{activeKey(ev), finishedKey(ev)}, pos, until.UnixMilli()).Err(); err != nil {
		return fmt.Errorf("activate %s: %w", ev, err)
	}
	return nil
}
