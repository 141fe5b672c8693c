package staffapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// isAdmin reports whether the caller is staff of the operator role or
// above: an API key, the admin bearer token, or a console session (with
// its CSRF token on changes); see staffAuth and roles.go. On
// the public routes that ask it, a bearer shaped like a JWT (an admission
// token or a ticket) is a shopper's and never counts as a failed admin
// sign-in, unless the admin token itself is shaped so.
func (s *API) isAdmin(c *fiber.Ctx) bool {
	if tok := kit.Bearer(c); jwtShaped(tok) && !jwtShaped(s.cfg.AdminToken) {
		return false
	}
	id, err := s.who(c)
	return err == nil && id.Role.Rank() >= staff.Operator.Rank()
}

func jwtShaped(s string) bool { return strings.Count(s, ".") == 2 }

func (s *API) requireAdmin(c *fiber.Ctx) error {
	if err := s.staffAuth(c); err != nil {
		return err
	}
	if !event.ValidID(c.Params("id")) {
		return kit.BadRequest("event id must be 1 to 64 characters of a-z 0-9 _ - and start with a letter or digit")
	}
	return c.Next()
}

// adminEventJSON is the staff view: configuration (without the seed until
// the window closes) and live figures.
type adminEventJSON struct {
	Config event.Config `json:"config"`
	Live   *liveJSON    `json:"live,omitempty"`
	// Friction is what the join defences amount to on this node.
	Friction any `json:"friction"`
}

type liveJSON struct {
	Joined       int64        `json:"joined"`
	Frontier     float64      `json:"frontier"`
	WindowFrozen bool         `json:"window_frozen"`
	WindowSize   int64        `json:"window_size"`
	Rate         float64      `json:"admitted_per_second"`
	Stock        claim.Totals `json:"stock"`
	// For the console: people admitted so far, people still waiting, and
	// the clock the locks are judged by.
	Admitted       int64     `json:"admitted"`
	QueueLength    int64     `json:"queue_length"`
	SoldOut        bool      `json:"sold_out"`
	WindowClosesAt time.Time `json:"window_closes_at"`
	ServerTime     time.Time `json:"server_time"`
	// OrderLag is how far the order worker trails the order stream.
	OrderLag *claim.Lag `json:"order_lag,omitempty"`
	// Lanes are the event's lanes' own queues; the figures above are the
	// default lane's.
	Lanes []laneLiveJSON `json:"lanes,omitempty"`
	// Active is how many people are in checkout (counted with max_active).
	Active int64 `json:"active"`
	// Health is the shop health check's state (with shop.health): Held
	// while it holds admission, apart from a staff pause.
	Health *admission.HealthState `json:"health,omitempty"`
}

// laneLiveJSON is one lane's live figures.
type laneLiveJSON struct {
	Name         string    `json:"name"`
	Rate         float64   `json:"admit_rate_per_second"`
	StartsAt     time.Time `json:"starts_at"`
	Joined       int64     `json:"joined"`
	Frontier     float64   `json:"frontier"`
	WindowFrozen bool      `json:"window_frozen"`
	WindowSize   int64     `json:"window_size"`
	NoShows      int64     `json:"no_shows"`
}

func (s *API) adminView(ctx context.Context, cfg event.Config) (adminEventJSON, error) {
	out := adminEventJSON{Config: cfg, Friction: s.deps.Friction(&cfg)}
	out.Config.Webhooks = event.RedactWebhooks(cfg.Webhooks) // secrets are write-only
	out.Config.Limits.Captcha = cfg.Limits.Captcha.Redacted()
	out.Config.Shop = event.RedactShop(cfg.Shop)
	sale, ok := s.deps.Sales.Get(cfg.ID)
	if !ok || !sale.WindowFrozen {
		out.Config.Seed = ""
	}
	if ok {
		t, err := s.deps.Store.Totals(ctx, claim.SaleOf(cfg))
		if err != nil {
			return out, err
		}
		out.Live = &liveJSON{Joined: sale.Joined, Frontier: sale.Frontier, WindowFrozen: sale.WindowFrozen, WindowSize: sale.Window, Rate: sale.Rate, Stock: t}
		adm := min(int64(sale.Frontier), sale.Joined)
		out.Live.Admitted, out.Live.QueueLength, out.Live.SoldOut = adm, sale.Joined-adm, sale.SoldOut
		out.Live.WindowClosesAt, out.Live.ServerTime = cfg.WindowEnd(), s.now().UTC()
		for i, v := range sale.Lanes {
			if i < len(cfg.Lanes) {
				l := &cfg.Lanes[i]
				out.Live.Lanes = append(out.Live.Lanes, laneLiveJSON{Name: l.Name, Rate: v.Rate, StartsAt: l.Start(&cfg).UTC(),
					Joined: v.Joined, Frontier: v.Frontier, WindowFrozen: v.WindowFrozen, WindowSize: v.Window, NoShows: v.NoShows})
			}
		}
		out.Live.Active = sale.Active
		if cfg.HealthChecked() && s.deps.Health != nil {
			h, err := s.deps.Health.State(ctx, cfg.ID)
			if err != nil {
				return out, err
			}
			out.Live.Health = &h
		}
		if s.deps.OrderLag != nil {
			lag, err := s.deps.OrderLag(ctx)
			if err != nil {
				s.cfg.Log.Warn("order lag", "err", err) // the view is still useful without it
			}
			out.Live.OrderLag = lag
		}
	}
	return out, nil
}

func (s *API) getEvent(c *fiber.Ctx) error {
	ctx, cancel := s.ctx(c)
	defer cancel()
	cfg, err := s.deps.Configs.Get(ctx, c.Params("id"))
	if err != nil {
		return err
	}
	out, err := s.adminView(ctx, cfg)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out)
}

// putEvent creates an event or updates fields of an existing one: the body
// is applied over the stored configuration, so staff may send only the
// fields they change. Locked fields (see event.CheckUpdate) answer 409.
func (s *API) putEvent(c *fiber.Ctx) error {
	id := strings.Clone(c.Params("id")) // kept in the node's view: must not alias fiber's buffer
	body := c.Body()
	ctx, cancel := s.ctx(c)
	defer cancel()
	for attempt := 0; ; attempt++ {
		old, saved, err := s.applyPut(ctx, id, body)
		if errors.Is(err, event.ErrConflict) && attempt < 3 {
			continue
		}
		var unlaid *stockNotLaid
		if errors.As(err, &unlaid) || errors.Is(err, event.ErrNotReplicated) {
			// Saved, its stock not laid or its replicas behind: recorded
			// as saved, answered as what it is.
			s.recordPut(c, id, &old, &saved)
			if rerr := s.deps.Sales.Reload(ctx, id); rerr != nil {
				s.cfg.Log.Warn("refresh after a save", "event", id, "err", rerr)
			}
			if unlaid != nil {
				return unlaid.problem(id)
			}
			return err
		}
		if err != nil {
			return err
		}
		if old.HealthChecked() && !saved.HealthChecked() && s.deps.Health != nil {
			// The check was removed: its hold ends, and a check added
			// later starts from no failures.
			if err := s.deps.Health.Reset(ctx, id); err != nil {
				return err
			}
		}
		if err := s.deps.Sales.Reload(ctx, id); err != nil {
			return err
		}
		out, err := s.adminView(ctx, saved)
		if err != nil {
			return err
		}
		status := fiber.StatusOK
		if saved.Version == 1 {
			status = fiber.StatusCreated
		}
		s.recordPut(c, id, &old, &saved)
		return c.Status(status).JSON(out)
	}
}

// recordPut writes a save into the audit trail.
func (s *API) recordPut(c *fiber.Ctx, id string, old, saved *event.Config) {
	action, prev := "event.update", old
	if saved.Version == 1 {
		action, prev = "event.create", nil
	}
	before, after := configDiff(prev, saved)
	if prev == nil {
		s.record(c, action, id, nil, after)
	} else {
		s.record(c, action, id, before, after)
	}
}

// applyPut saves the configuration and returns it and the one it replaced.
func (s *API) applyPut(ctx context.Context, id string, body []byte) (old, saved event.Config, err error) {
	old, err = s.deps.Configs.Get(ctx, id)
	exists := err == nil
	if err != nil && !errors.Is(err, event.ErrNotFound) {
		return old, event.Config{}, err
	}
	next, err := detached(old)
	if err != nil {
		return old, event.Config{}, err
	}
	clearArrays(reflect.ValueOf(&next), body)
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&next); err != nil {
		return old, event.Config{}, kit.BadRequest("malformed event JSON: %s", kit.JSONProblem(err))
	}
	if dec.More() {
		return old, event.Config{}, kit.BadRequest("malformed event JSON: trailing data")
	}
	if next.ID != "" && next.ID != id {
		return old, event.Config{}, kit.BadRequest("id in the body (%q) differs from the path", next.ID)
	}
	// Fields staff never set.
	next.ID, next.Seed, next.SeedCommitment, next.Version = id, old.Seed, old.SeedCommitment, old.Version
	next.LaneSeeds = old.LaneSeeds
	next.PageVersion = old.PageVersion // set by publishing the page (page_admin.go)
	if err := event.KeepFailOpen(&old, &next); err != nil {
		return old, event.Config{}, err // set with its own route, confirmed (failopen.go)
	}
	event.KeepWebhookSecrets(&old, &next)
	event.KeepShopSecret(&old, &next)
	next.Defaults()
	if err := next.Validate(); err != nil {
		return old, event.Config{}, err
	}
	if err := event.CheckWebhookSchemes(&next, s.cfg.WebhookAllowHTTP); err != nil {
		return old, event.Config{}, err
	}
	if err := event.CheckSignalSources(&next, len(s.cfg.Proxies) > 0, s.cfg.TokenClaims); err != nil {
		return old, event.Config{}, err
	}
	if err := event.CheckAttestation(&next, s.cfg.PlayIntegrity); err != nil {
		return old, event.Config{}, err
	}
	if s.deps.CheckRules != nil {
		if err := s.deps.CheckRules(&next); err != nil {
			return old, event.Config{}, err // a bad rule, by name and column: nothing saved
		}
	}
	if s.deps.SyncDoor != nil && (doorLists(&old.Door) || doorLists(&next.Door)) {
		// The lists either door references get their copies in the
		// sale's slots before the save (an unknown one refuses it, 400);
		// once the save is judged, the door stored keeps its own and the
		// other's go. Until then the join script reads the stored door's
		// copies: a refused save must not drop them.
		both := next
		both.Door.BlockLists = slices.Concat(old.Door.BlockLists, next.Door.BlockLists)
		both.Door.EligibleLists = slices.Concat(old.Door.EligibleLists, next.Door.EligibleLists)
		if err := s.deps.SyncDoor(ctx, &both); err != nil {
			return old, event.Config{}, err
		}
		defer func() {
			keep := saved
			if err != nil && saved.Version == 0 { // not saved: the stored door stays
				keep = old
				keep.ID = id
			}
			if serr := s.deps.SyncDoor(context.WithoutCancel(ctx), &keep); serr != nil {
				s.cfg.Log.Warn("settle the door's list copies after a save (the next save does)", "event", id, "err", serr)
			}
		}()
	}
	// The locks are judged by Redis TIME in the same step as the save. A
	// change of stock holds the buckets and checks them before the save,
	// and lays the stock after it (see claim.Store.Hold): a refused save
	// changes nothing, and stock is laid only for a saved configuration.
	var lock time.Time
	if exists {
		lock = event.LockAt(&old, &next)
	}
	var hold *claim.Hold
	if !exists || event.StockChanged(&old, &next) {
		var from claim.Stock
		if exists {
			from = claim.Stock{Buckets: old.Buckets, Units: old.OnSale()}
		}
		hold, err = s.deps.Store.Hold(ctx, claim.Restock{Event: id, From: from,
			To: claim.Stock{Buckets: next.Buckets, Units: next.OnSale()}, Version: old.Version + 1, Lock: lock})
		if errors.Is(err, claim.ErrLockReached) {
			if why := event.CheckUpdate(&old, &next, lock); why != nil {
				return old, event.Config{}, why // names the locked fields
			}
		}
		if err != nil {
			return old, event.Config{}, saveRefused(id, err)
		}
		defer func() {
			if err := hold.Release(context.WithoutCancel(ctx)); err != nil {
				s.cfg.Log.Warn("release a save's hold on the stock (it expires by itself)", "event", id, "err", err)
			}
		}()
	}
	saved, at, err := s.deps.Configs.PutBefore(ctx, next, lock)
	if errors.Is(err, event.ErrLocked) {
		if why := event.CheckUpdate(&old, &next, at); why != nil {
			return old, event.Config{}, why // names the locked fields
		}
	}
	// Saved on the primary and not yet copied by its replicas, the save
	// stands: its stock is laid, and the caller answers what it is.
	unreplicated := errors.Is(err, event.ErrNotReplicated)
	if err != nil && !unreplicated {
		return old, event.Config{}, err
	}
	if hold != nil {
		if err := hold.Lay(ctx); err != nil {
			return old, saved, &stockNotLaid{version: saved.Version, err: err}
		}
	}
	if unreplicated {
		return old, saved, err
	}
	return old, saved, nil
}

// pauseEvent answers POST /admin/events/{id}/pause (paused) and /resume:
// admission holds, or goes on from where it stopped.
func (s *API) pauseEvent(paused bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		return s.change(c, func(cfg *event.Config) (string, fiber.Map, fiber.Map, error) {
			was := cfg.Paused
			cfg.Paused = paused
			action := "event.resume"
			if paused {
				action = "event.pause"
			}
			return action, fiber.Map{"paused": was}, fiber.Map{"paused": paused}, nil
		})
	}
}

// change applies edit to the stored configuration of the event in the
// path and saves it, reading it again on a concurrent change (up to
// three times); then it records edit's action with its before and after
// in the audit trail, reloads the node's view of the sale and answers
// the event's admin view. An error from edit is the answer, nothing
// saved. Pause, resume, close and reopen are such changes.
func (s *API) change(c *fiber.Ctx, edit func(cfg *event.Config) (action string, before, after fiber.Map, err error)) error {
	id := strings.Clone(c.Params("id"))
	ctx, cancel := s.ctx(c)
	defer cancel()
	for attempt := 0; ; attempt++ {
		cfg, err := s.deps.Configs.Get(ctx, id)
		if err != nil {
			return err
		}
		action, before, after, err := edit(&cfg)
		if err != nil {
			return err
		}
		saved, err := s.deps.Configs.Put(ctx, cfg)
		if errors.Is(err, event.ErrConflict) && attempt < 3 {
			continue
		}
		unreplicated := errors.Is(err, event.ErrNotReplicated)
		if err != nil && !unreplicated {
			return err
		}
		s.record(c, action, id, before, after)
		if err := s.deps.Sales.Reload(ctx, id); err != nil {
			return err
		}
		if unreplicated {
			return err // saved on the primary: staff send it again
		}
		out, err := s.adminView(ctx, saved)
		if err != nil {
			return err
		}
		return c.JSON(out)
	}
}

// detached returns a copy of c that shares no slice, map or pointer with
// it: the body is decoded into the copy, and the audit compares it with
// c (decoding into a shallow copy wrote a door's new rules into the old
// configuration's array, and the change went unaudited). The copy is a
// JSON round trip, as the event store keeps configurations.
func detached(c event.Config) (event.Config, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return event.Config{}, fmt.Errorf("copy event %s: %w", c.ID, err)
	}
	var out event.Config
	if err := json.Unmarshal(raw, &out); err != nil {
		return event.Config{}, fmt.Errorf("copy event %s: %w", c.ID, err)
	}
	return out, nil
}

// clearArrays empties each slice of v that the JSON raw gives as an
// array, so decoding raw over v replaces the slice whole: encoding/json
// decodes an array into a slice's elements in place, and an element's
// field the body leaves out kept the stored element's at that index (a
// lane's start; the secret of another URL's webhook). Objects still
// merge, as the PUT documents.
func clearArrays(v reflect.Value, raw []byte) {
	raw = bytes.TrimSpace(raw)
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			clearArrays(v.Elem(), raw)
		}
	case reflect.Slice:
		if len(raw) > 0 && raw[0] == '[' {
			v.Set(reflect.Zero(v.Type()))
		}
	case reflect.Struct:
		if len(raw) == 0 || raw[0] != '{' {
			return
		}
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) != nil {
			return // the decode says what is wrong
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if r, ok := fields[name]; ok && f.IsExported() && name != "" {
				clearArrays(v.Field(i), r)
			}
		}
	}
}

// doorLists reports whether a door references any list.
func doorLists(d *event.Door) bool { return len(d.BlockLists)+len(d.EligibleLists) > 0 }
