package claim

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/anteroom/anteroom/event"
)

//go:embed layfor.lua
var layForLua string

// LayFor sets the stock of sale for its saved configuration version:
// units spread evenly over its buckets. Staff changes save the configuration
// first and lay its stock after, so the stock never belongs to a
// configuration that was not saved; each bucket remembers the version its
// stock was laid for and skips an older one (two concurrent saves lay in
// version order, whatever order their lays arrive in). A bucket whose sale
// has started by Redis TIME, or that has granted units, is never laid
// again: the error then wraps event.ErrLocked.
func (s *Store) LayFor(ctx context.Context, sale Sale, units int64, version int64, startsAt time.Time) error {
	for b := range sale.Buckets {
		k := bucketOf(sale.ID, b)
		res, err := s.lua.layFor.Run(ctx, s.rdb, []string{k.stock(), k.stats()}, sale.share(units, b), version, startsAt.UnixMilli()).Int64()
		if err != nil {
			return fmt.Errorf("lay stock %s/%d: %w", sale.ID, b, err)
		}
		if res < 0 {
			return fmt.Errorf("%w: stock of %s/%d is live and cannot be laid again", event.ErrLocked, sale.ID, b)
		}
	}
	return nil
}
