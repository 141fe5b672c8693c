package staffapi

import (
	"context"
	"encoding/csv"
	"strconv"
	"strings"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// The sweep and cancellations (operator role): GET
// /admin/events/{id}/sweep lists the groups of live claims that share a
// signal value (package claim's sweep.go), as JSON or, with ?format=csv
// or Accept: text/csv, as CSV; POST /admin/events/{id}/cancellations
// cancels chosen claims or a whole group, with a reason and a restock
// choice, audited as claim.cancel. The order_cancelled events and their
// webhooks are claim.Service.Cancel's.

// sweeper reads groups of claims sharing signals; *claim.Store.
type sweeper interface {
	Sweep(ctx context.Context, sale claim.Sale, opt claim.SweepOptions) (claim.Sweep, error)
	Group(ctx context.Context, sale claim.Sale, dim, hash string) ([]claim.SweepClaim, error)
}

// sweepTimeout bounds a sweep: reading every claim record of a sale.
const sweepTimeout = 30 * time.Second

// getSweep answers GET /admin/events/{id}/sweep.
func (s *API) getSweep(c *fiber.Ctx) error {
	if s.deps.Sweeps == nil {
		return kit.RetryLater("degraded", "this node cannot sweep claims", 5)
	}
	opt := claim.SweepOptions{Dim: c.Query("dimension")}
	for _, q := range []struct {
		name string
		v    *int
		max  int
	}{{"limit", &opt.Limit, claim.MaxSweepGroups}, {"offset", &opt.Offset, 1 << 30}, {"min_size", &opt.MinSize, 1 << 20}, {"max_claims", &opt.MaxClaims, claim.MaxCancel}} {
		raw := c.Query(q.name)
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 || n > q.max {
			return kit.BadRequest("%s must be an integer from 0 to %d", q.name, q.max)
		}
		*q.v = n
	}
	if opt.Dim != "" && claim.Weight(opt.Dim) == 0 {
		return kit.BadRequest("dimension must be device, payment, phone, address, network or token:<claim>")
	}
	format := c.Query("format")
	if format == "" && strings.Contains(c.Get(fiber.HeaderAccept), "text/csv") {
		format = "csv"
	}
	if format != "" && format != "csv" && format != "json" {
		return kit.BadRequest("format must be json or csv")
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), sweepTimeout)
	defer cancel()
	cfg, err := s.deps.Configs.Get(ctx, c.Params("id"))
	if err != nil {
		return err
	}
	sw, err := s.deps.Sweeps.Sweep(ctx, claim.SaleOf(cfg), opt)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	if format != "csv" {
		return c.JSON(sw)
	}
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="anteroom-sweep-`+cfg.ID+`.csv"`)
	w := csv.NewWriter(c.Response().BodyWriter())
	_ = w.Write([]string{"rank", "dimension", "hash", "size", "users", "score", "claim_id", "user", "status"})
	for i, g := range sw.Groups {
		for _, cl := range g.Claims {
			_ = w.Write([]string{strconv.Itoa(opt.Offset + i + 1), g.Dim, g.Hash, strconv.Itoa(g.Size), strconv.Itoa(g.Users),
				strconv.Itoa(g.Score), cl.ID, csvSafe(cl.User), string(cl.Status)})
		}
	}
	w.Flush()
	return w.Error()
}

// cancellationJSON is the body of POST /admin/events/{id}/cancellations:
// claim ids, or a group (dimension and hash, as the sweep lists them), not
// both; a reason; whether the units go back to stock (required).
type cancellationJSON struct {
	ClaimIDs []string `json:"claim_ids"`
	Group    *struct {
		Dimension string `json:"dimension"`
		Hash      string `json:"hash"`
	} `json:"group"`
	Reason  string `json:"reason"`
	Restock *bool  `json:"restock"`
}

// cancelClaims answers POST /admin/events/{id}/cancellations.
func (s *API) cancelClaims(c *fiber.Ctx) error {
	if s.deps.Sweeps == nil || s.deps.Cancel == nil {
		return kit.RetryLater("degraded", "this node cannot cancel claims", 5)
	}
	var in cancellationJSON
	if err := kit.DecodeStrict(c, "cancellation", &in); err != nil {
		return err
	}
	if in.Restock == nil {
		return kit.BadRequest("restock is required: true returns each unit to the stock while the sale sells, false keeps it sold and void")
	}
	if (len(in.ClaimIDs) == 0) == (in.Group == nil) {
		return kit.BadRequest("name claim_ids or a group (dimension and hash), one of the two")
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	cfg, err := s.deps.Configs.Get(ctx, strings.Clone(c.Params("id")))
	if err != nil {
		return err
	}
	if *in.Restock && (!s.now().Before(cfg.EndsAt) || cfg.IsClosed()) {
		return kit.BadRequest("restock: the sale no longer sells (it ended or is closed); cancel with restock false")
	}
	sale := claim.SaleOf(cfg)
	ids := in.ClaimIDs
	if in.Group != nil {
		if claim.Weight(in.Group.Dimension) == 0 {
			return kit.BadRequest("group.dimension must be device, payment, phone, address, network or token:<claim>")
		}
		members, err := s.deps.Sweeps.Group(ctx, sale, in.Group.Dimension, in.Group.Hash)
		if err != nil {
			return err
		}
		if len(members) == 0 {
			return &claim.CancelError{IDs: []string{in.Group.Dimension + ":" + in.Group.Hash}, Why: []string{"unknown"}}
		}
		for _, m := range members {
			ids = append(ids, m.ID)
		}
	}
	id, _ := kit.StaffOf(c)
	recs, err := s.deps.Cancel(ctx, sale, claim.Cancellation{IDs: ids, Reason: in.Reason, Restock: *in.Restock, By: id.Name})
	out := make([]fiber.Map, len(recs))
	for i, r := range recs {
		out[i] = fiber.Map{"claim_id": r.ID, "user": r.User, "status": r.Status}
	}
	if len(recs) > 0 {
		s.record(c, "claim.cancel", cfg.ID, fiber.Map{"claim_ids": ids},
			fiber.Map{"cancelled": out, "reason": strings.TrimSpace(in.Reason), "restock": *in.Restock})
	}
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"cancelled": out, "reason": strings.TrimSpace(in.Reason), "restock": *in.Restock})
}
