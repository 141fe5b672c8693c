package staffapi

import (
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// failOpenJSON is the body of PUT /admin/events/{id}/fail-open.
type failOpenJSON struct {
	// Until is the deadline (RFC 3339): in the future, at most
	// event.MaxFailOpen ahead.
	Until time.Time `json:"until"`
	// Confirm must be the event id: the caller says which room it opens.
	Confirm string `json:"confirm"`
}

// failOpen answers PUT /admin/events/{id}/fail-open {"until": ...,
// "confirm": <id>}: the gate lets everyone through until the deadline
// (event.Config.FailOpenUntil), then is the ordinary gate again by
// itself. Claims still need an admission. Setting it again replaces the
// deadline. A bad body, a deadline in the past or too far ahead, and a
// missing or wrong confirmation are a 400 that changes nothing.
func (s *API) failOpen(c *fiber.Ctx) error {
	var in failOpenJSON
	if err := kit.DecodeStrict(c, "fail-open", &in); err != nil {
		return err
	}
	until := in.Until.UTC()
	return s.change(c, func(cfg *event.Config) (string, fiber.Map, fiber.Map, error) {
		if err := cfg.CheckFailOpen(until, in.Confirm, s.now()); err != nil {
			return "", nil, nil, err
		}
		was := cfg.FailOpenUntil
		cfg.FailOpenUntil = &until
		return "event.fail_open", fiber.Map{"fail_open_until": was}, fiber.Map{"fail_open_until": until}, nil
	})
}

// endFailOpen answers DELETE /admin/events/{id}/fail-open: the gate checks
// admissions again at once (within a tick on every node). Ending a
// fail-open that is not set, or has passed, clears it all the same.
func (s *API) endFailOpen(c *fiber.Ctx) error {
	return s.change(c, func(cfg *event.Config) (string, fiber.Map, fiber.Map, error) {
		was := cfg.FailOpenUntil
		cfg.FailOpenUntil = nil
		return "event.fail_open_end", fiber.Map{"fail_open_until": was}, fiber.Map{"fail_open_until": nil}, nil
	})
}
