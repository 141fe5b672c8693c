package web

import (
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/gofiber/fiber/v2"
)

type localKey int

const saleKey localKey = iota

// loadEvent validates the :id parameter and puts the node's view of the
// sale into Locals. Unknown events are answered without Redis.
func (s *Server) loadEvent(c *fiber.Ctx) error {
	id := c.Params("id")
	if !event.ValidID(id) {
		return errUnknownEvent
	}
	sale, ok := s.deps.Sales.Get(id)
	if !ok {
		return errUnknownEvent
	}
	c.Locals(saleKey, sale)
	return c.Next()
}

func saleOf(c *fiber.Ctx) *admission.Sale { return c.Locals(saleKey).(*admission.Sale) }

// publicEventJSON is the public face of a sale: tiny, CDN-cacheable.
type publicEventJSON struct {
	ID              string      `json:"id"`
	Name            string      `json:"name"`
	State           event.Phase `json:"state"`
	ServerTime      time.Time   `json:"server_time"`
	PrequeueOpensAt time.Time   `json:"prequeue_opens_at"`
	StartsAt        time.Time   `json:"starts_at"`
	EndsAt          time.Time   `json:"ends_at"`
	WindowClosesAt  time.Time   `json:"window_closes_at"`
	Mode            event.Mode  `json:"mode"`
	Supply          int64       `json:"supply"`
	PerUserLimit    int64       `json:"per_user_limit"`
	Remaining       int64       `json:"remaining"`
	Paused          bool        `json:"paused"`
	SeedCommitment  string      `json:"seed_commitment"`
	Seed            string      `json:"seed,omitempty"`
	WindowSize      *int64      `json:"window_size,omitempty"`
	ShardWindows    []int64     `json:"shard_window_sizes,omitempty"` // W_s, with join shards
	Joined          int64       `json:"joined"`
	Admitted        int64       `json:"admitted"`
	// Captcha names the widget join asks for: provider and public site
	// key, never the secret.
	Captcha *publicCaptchaJSON `json:"captcha,omitempty"`
}

type publicCaptchaJSON struct {
	Provider string `json:"provider"`
	SiteKey  string `json:"site_key"`
	Header   string `json:"header"`
}

// coarse rounds stock down to two significant digits above 100, so the
// public JSON tells shoppers how close the end is without exact figures.
func coarse(n int64) int64 {
	if n <= 100 {
		return max(n, 0)
	}
	p := int64(1)
	for n/p >= 100 {
		p *= 10
	}
	return n / p * p
}

func (s *Server) publicEvent(c *fiber.Ctx) error {
	sale := saleOf(c)
	cfg := &sale.Config
	now := s.now()
	out := publicEventJSON{
		ID: cfg.ID, Name: cfg.Name, State: cfg.PhaseAt(now, sale.SoldOut), ServerTime: now.UTC(),
		PrequeueOpensAt: cfg.PrequeueOpensAt, StartsAt: cfg.StartsAt, EndsAt: cfg.EndsAt, WindowClosesAt: cfg.WindowEnd(),
		Mode: cfg.Mode, Supply: cfg.OnSale(), PerUserLimit: cfg.PerUserLimit, Remaining: coarse(sale.Remaining),
		Paused: cfg.Paused || sale.HealthHeld, SeedCommitment: cfg.SeedCommitment, Joined: sale.Joined,
		Admitted: min(int64(sale.Frontier), sale.Joined),
	}
	if sale.WindowFrozen {
		out.Seed = cfg.Seed
		w := sale.Window
		out.WindowSize = &w
		if sale.Order != nil {
			out.ShardWindows = sale.Order.Windows()
		}
	}
	if cc := &cfg.Limits.Captcha; cc.On() {
		out.Captcha = &publicCaptchaJSON{Provider: cc.Provider, SiteKey: cc.SiteKey, Header: CaptchaHeader}
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=1")
	return c.JSON(out)
}

func pollMillis(d time.Duration) int64 { return d.Milliseconds() }
