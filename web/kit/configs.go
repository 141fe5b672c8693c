package kit

import (
	"context"
	"time"

	"github.com/anteroom/anteroom/event"
)

// ConfigStore keeps sales' configurations (*event.Store): what the staff
// API saves and the pages' publishing stamps its version on.
type ConfigStore interface {
	Get(ctx context.Context, id string) (event.Config, error)
	Put(ctx context.Context, c event.Config) (event.Config, error)
	PutBefore(ctx context.Context, c event.Config, lock time.Time) (event.Config, time.Time, error)
}
