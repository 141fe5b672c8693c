package shopper

import (
	"strings"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

type claimListJSON struct {
	Claims []recordJSON `json:"claims"`
}

func toRecordJSON(ev string, r claim.Record) recordJSON {
	return recordJSON{ClaimID: r.ID, Event: ev, Status: r.Status, Position: r.Pos, ClaimedAt: time.UnixMilli(r.AtMs).UTC()}
}

// listClaims shows the caller every claim they hold or held in the event,
// oldest first. The caller is named as for join.
func (s *API) listClaims(c *fiber.Ctx) error {
	cfg := &kit.SaleOf(c).Config
	user, err := s.deps.Identity.User(c, false)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	recs, err := s.deps.Store.Mine(ctx, claim.SaleOf(*cfg), user)
	if err != nil {
		return err
	}
	out := claimListJSON{Claims: make([]recordJSON, 0, len(recs))}
	for _, r := range recs {
		out.Claims = append(out.Claims, toRecordJSON(cfg.ID, r))
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out)
}

// releaseClaim gives a pending claim's unit back, for the claim's own user
// or an admin (operator or above), whose release is audited like every
// staff change. Releasing a released claim again answers the same; a
// confirmed claim answers 409.
func (s *API) releaseClaim(c *fiber.Ctx) error {
	cfg := &kit.SaleOf(c).Config
	id := strings.Clone(c.Params("claim_id"))
	if _, err := claim.ParseClaimID(id); err != nil {
		return err
	}
	user := "" // an admin releases any claim
	if !s.deps.IsAdmin(c) {
		u, err := s.deps.Identity.User(c, false)
		if err != nil {
			return err
		}
		user = u
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	rec, err := s.deps.Claims.Release(ctx, cfg.ID, id, user)
	if err != nil {
		return err
	}
	if user == "" {
		s.deps.Record(c, "claim.release", cfg.ID, fiber.Map{"claim_id": rec.ID, "user": rec.User}, fiber.Map{"status": rec.Status})
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(toRecordJSON(cfg.ID, rec))
}
