package staffapi

import (
	"errors"
	"fmt"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// saveRefused is the answer to a save whose stock change the buckets
// refused before anything was stored.
func saveRefused(id string, err error) error {
	if errors.Is(err, claim.ErrNeedsRebuild) {
		return kit.NewProblem(fiber.StatusConflict, "needs_rebuild", fmt.Sprintf(
			"nothing was saved: this change lays stock, and the stock of %s is fenced since its Redis server changed (failover, slot migration or lost data), so units sold there may be missing; rebuild it first (POST /admin/events/%s/rebuild), then save again", id, id))
	}
	return err
}

// stockNotLaid is a save stored whose stock could not be laid afterwards
// (its hold ended, a failover or a Redis error in between).
type stockNotLaid struct {
	version int64
	err     error
}

func (e *stockNotLaid) Error() string {
	return fmt.Sprintf("configuration version %d saved, its stock not laid: %v", e.version, e.err)
}

func (e *stockNotLaid) Unwrap() error { return e.err }

func (e *stockNotLaid) problem(id string) error {
	p := kit.RetryLater("stock_not_laid", fmt.Sprintf(
		"the change was saved (version %d) but its stock could not be laid; save again, or rebuild the stock from the saved configuration (POST /admin/events/%s/rebuild)", e.version, id), 5)
	return p
}
