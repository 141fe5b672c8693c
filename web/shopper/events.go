package shopper

import (
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// PublicEvent is the public face of a sale: tiny, CDN-cacheable.
type PublicEvent struct {
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
	// Closed is staff's closure while the room is closed (event.Closure:
	// nobody joins or claims; the queued keep their place): its message
	// (empty: the page's default text) and announced end.
	Closed         *event.Closure `json:"closed,omitempty"`
	SeedCommitment string         `json:"seed_commitment"`
	Seed           string         `json:"seed,omitempty"`
	WindowSize     *int64         `json:"window_size,omitempty"`
	ShardWindows   []int64        `json:"shard_window_sizes,omitempty"` // W_s, with join shards
	// Lanes are the event's lanes in their configured order (lane index
	// i+1 of a ticket's seq, queue.Laned), each with its own window.
	Lanes []publicLaneJSON `json:"lanes,omitempty"`
	// LaneSeeds: each lane draws with its own seed derived from the
	// event's (queue.LaneSeed); absent for an event created before, whose
	// lanes draw with the event's seed.
	LaneSeeds bool  `json:"lane_seeds,omitempty"`
	Joined    int64 `json:"joined"`
	Admitted  int64 `json:"admitted"`
	// Captcha names the widget join asks for: provider and public site
	// key, never the secret.
	Captcha *publicCaptchaJSON `json:"captcha,omitempty"`
}

// publicLaneJSON is the public face of one lane (event.Lane): what anyone
// needs to recompute a lane member's position, never its share or claim.
// WindowSize is the lane's frozen window size once the window closed (at
// the lane's start); its members' positions are the event's permutation
// over it (queue.NewPermutation(queue.LaneSeed(seed, lane), window_size),
// or the event's seed itself without lane_seeds).
type publicLaneJSON struct {
	Name       string    `json:"name"`
	StartsAt   time.Time `json:"starts_at"`
	WindowSize *int64    `json:"window_size,omitempty"`
}

type publicCaptchaJSON struct {
	Provider string `json:"provider"`
	SiteKey  string `json:"site_key"`
	Header   string `json:"header"`
}

// Coarse rounds stock down to two significant digits above 100, so the
// public JSON tells shoppers how close the end is without exact figures.
func Coarse(n int64) int64 {
	if n <= 100 {
		return max(n, 0)
	}
	p := int64(1)
	for n/p >= 100 {
		p *= 10
	}
	return n / p * p
}

func (s *API) publicEvent(c *fiber.Ctx) error {
	sale := kit.SaleOf(c)
	cfg := &sale.Config
	now := s.now()
	out := PublicEvent{
		ID: cfg.ID, Name: cfg.Name, State: cfg.PhaseAt(now, sale.SoldOut), ServerTime: now.UTC(),
		PrequeueOpensAt: cfg.PrequeueOpensAt, StartsAt: cfg.StartsAt, EndsAt: cfg.EndsAt, WindowClosesAt: cfg.WindowEnd(),
		Mode: cfg.Mode, Supply: cfg.OnSale(), PerUserLimit: cfg.PerUserLimit, Remaining: Coarse(sale.Remaining),
		Paused: cfg.Paused || sale.HealthHeld, SeedCommitment: cfg.SeedCommitment, Joined: sale.Joined,
		Admitted: min(int64(sale.Frontier), sale.Joined), Closed: cfg.Closed,
	}
	if sale.WindowFrozen {
		out.Seed = cfg.Seed
		w := sale.Window
		out.WindowSize = &w
		if sale.Order != nil {
			out.ShardWindows = sale.Order.Windows()
		}
	}
	out.Lanes = publicLanes(sale)
	out.LaneSeeds = cfg.LaneSeeds && len(cfg.Lanes) > 0
	if cc := &cfg.Limits.Captcha; cc.On() {
		out.Captcha = &publicCaptchaJSON{Provider: cc.Provider, SiteKey: cc.SiteKey, Header: kit.CaptchaHeader}
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=1")
	return c.JSON(out)
}

// publicLanes lists the lanes of sale from the node's view: each lane's
// window size once it is frozen, as the event's own window_size.
func publicLanes(sale *admission.Sale) []publicLaneJSON {
	cfg := &sale.Config
	if len(cfg.Lanes) == 0 {
		return nil
	}
	out := make([]publicLaneJSON, len(cfg.Lanes))
	for i := range cfg.Lanes {
		l := &cfg.Lanes[i]
		out[i] = publicLaneJSON{Name: l.Name, StartsAt: l.Start(cfg).UTC()}
		if i < len(sale.Lanes) && sale.Lanes[i].WindowFrozen {
			w := sale.Lanes[i].Window
			out[i].WindowSize = &w
		}
	}
	return out
}

func pollMillis(d time.Duration) int64 { return d.Milliseconds() }
