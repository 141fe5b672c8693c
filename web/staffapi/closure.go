package staffapi

import (
	"bytes"
	"encoding/json"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// closeEvent answers POST /admin/events/{id}/close with an optional body
// {"message": ..., "until": ...} (event.Closure): the room turns everyone
// away until staff reopen it (POST .../reopen, reopenEvent). Closing a
// closed room replaces its message and end. A bad body is a 400 and
// nothing changes.
func (s *API) closeEvent(c *fiber.Ctx) error {
	var cl event.Closure
	if body := bytes.TrimSpace(c.Body()); len(body) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cl); err != nil {
			return kit.BadRequest("malformed closure JSON: %s", kit.JSONProblem(err))
		}
		if dec.More() {
			return kit.BadRequest("malformed closure JSON: trailing data")
		}
	}
	return s.setClosure(c, &cl)
}

// reopenEvent answers POST /admin/events/{id}/reopen: the room takes
// joins and claims again and admission resumes where it stopped.
func (s *API) reopenEvent(c *fiber.Ctx) error { return s.setClosure(c, nil) }

// setClosure saves cl (nil: open) as the event's closure, retrying a
// concurrent change, records it in the audit trail and answers the
// event's admin view.
func (s *API) setClosure(c *fiber.Ctx, cl *event.Closure) error {
	return s.change(c, func(cfg *event.Config) (string, fiber.Map, fiber.Map, error) {
		was := cfg.Closed
		cfg.Closed = cl
		if err := cfg.Validate(); err != nil { // the closure's message; the rest was valid
			return "", nil, nil, err
		}
		action := "event.close"
		if cl == nil {
			action = "event.reopen"
		}
		return action, fiber.Map{"closed": was}, fiber.Map{"closed": cl}, nil
	})
}
