package staffapi

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"strings"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// doorTest is the body of POST /admin/events/{id}/door/test: a described
// request, and the rules to try (the saved ones when absent).
type doorTest struct {
	Method  string              `json:"method"`
	Host    string              `json:"host"`
	Path    string              `json:"path"`
	Query   string              `json:"query"`
	Headers map[string]string   `json:"headers"`
	Cookies map[string]string   `json:"cookies"`
	IP      string              `json:"ip"`
	User    string              `json:"user"`
	Claims  map[string][]string `json:"claims"`
	// Busy describes a join over the sale's per-IP budget: the rule
	// function busy_network().
	Busy  bool          `json:"busy"`
	Rules *[]event.Rule `json:"rules"`
}

// testDoor answers POST /admin/events/{id}/door/test: what the sale's
// door — its lists, and its rules or the rules of the body, not saved yet
// — decides for a described request (Deps.TryRules), "this request would
// be …": {"then": "bypass", "rule": "static"}, {"then": "queue", "rule":
// null} when nothing holds it, {"then": "block", "rule": null} for a
// block list, {"then": "not_eligible", …} for a caller on none of its
// eligibility lists. It changes nothing and is not audited.
func (s *API) testDoor(c *fiber.Ctx) error {
	if s.deps.TryRules == nil {
		return kit.NewProblem(fiber.StatusNotFound, "not_found", "this node does not evaluate door rules")
	}
	var body doorTest
	dec := json.NewDecoder(bytes.NewReader(c.Body()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return kit.BadRequest("malformed door test JSON: %s", kit.JSONProblem(err))
	}
	r := &door.Request{Method: strings.ToUpper(body.Method), Host: body.Host, Path: body.Path, Query: strings.TrimPrefix(body.Query, "?"),
		User: body.User, Claims: body.Claims, Busy: body.Busy, Now: s.now()}
	if r.Method == "" {
		r.Method = fiber.MethodGet
	}
	if r.Path == "" {
		r.Path = "/"
	}
	if body.IP != "" {
		addr, err := netip.ParseAddr(body.IP)
		if err != nil {
			return kit.BadRequest("ip %q is not an address", body.IP)
		}
		r.Addr = addr
	}
	headers := make(map[string]string, len(body.Headers))
	for k, v := range body.Headers {
		headers[strings.ToLower(k)] = v
	}
	r.Header = func(name string) string { return headers[strings.ToLower(name)] }
	r.Cookie = func(name string) string { return body.Cookies[name] }

	ctx, cancel := s.ctx(c)
	defer cancel()
	cfg, err := s.deps.Configs.Get(ctx, c.Params("id"))
	if err != nil {
		return err
	}
	if body.Rules != nil {
		cfg.Door.Rules = *body.Rules
		if err := cfg.Validate(); err != nil {
			return err
		}
	}
	name, then, ok, err := s.deps.TryRules(&cfg, r)
	if err != nil {
		return err
	}
	var rule any
	if ok {
		rule = name
	}
	return c.JSON(fiber.Map{"then": then.String(), "rule": rule})
}
