package shopper

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/lifecycle"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Shop calls: the shop tells anteroom that a checkout session finished or
// how healthy it is. They are signed with the sale's shop.secret, never a
// shopper's credential, in the header ShopSignatureHeader.

// ShopSignatureHeader carries a shop call's signature: "t=<unix
// seconds>,v1=<hex HMAC-SHA256 of "<t>.<path>.<body>" keyed by the sale's
// shop.secret>", path being the request path as sent (without the query).
// The path is signed so a captured signature cannot finish another session.
const ShopSignatureHeader = "X-Anteroom-Signature"

// ShopSignatureTolerance is how far a shop call's timestamp may be from the
// node's clock.
const ShopSignatureTolerance = 5 * time.Minute

// SignShopCall returns the ShopSignatureHeader value of a call to path with
// body at t, as a shop written in Go computes it.
func SignShopCall(secret string, t time.Time, path string, body []byte) string {
	return lifecycle.Sign(secret, t, shopMessage(path, body))
}

// shopMessage is what a shop call's signature covers beside its time: the
// path, so a captured signature finishes no other session, and the body.
// Signed and checked as lifecycle signs webhooks: HMAC-SHA256 of
// "<t>.<path>.<body>".
func shopMessage(path string, body []byte) []byte {
	return append([]byte(path+"."), body...)
}

// sessions is what the finished-session call needs (admission.Frontier).
type sessions interface {
	Finish(ctx context.Context, ev, jti string) (admission.Finished, error)
}

// healthSignals is what the health push needs (admission.Health).
type healthSignals interface {
	Observe(ctx context.Context, ev string, h *event.HealthCheck, o admission.Observation) (held, changed bool, err error)
	State(ctx context.Context, ev string) (admission.HealthState, error)
	Reset(ctx context.Context, ev string) error
}

var errBadShopSignature = kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated",
	"missing, malformed, stale or wrong "+ShopSignatureHeader+" (shop calls are signed with the sale's shop.secret)")

// shopAuth checks the shop call's signature against the sale's secret.
func (s *API) shopAuth(c *fiber.Ctx, cfg *event.Config) error {
	if cfg.Shop.Secret == "" {
		return kit.NewProblem(fiber.StatusForbidden, "forbidden", "this sale takes no shop calls: set shop.secret in its configuration")
	}
	if lifecycle.Verify(cfg.Shop.Secret, c.Get(ShopSignatureHeader), shopMessage(c.Path(), c.Body()), s.now(), ShopSignatureTolerance) != nil {
		return errBadShopSignature
	}
	return nil
}

// validJTI reports whether s can be an admission token's jti (base64url,
// at most 64 characters).
func validJTI(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// finishSession answers POST /events/{id}/sessions/{jti}/finished: the shop
// reports that the checkout session of the admission token with that jti
// is over, so max_active makes room for the next person (at the rate).
// Idempotent: a repeat answers 200 with replay true.
func (s *API) finishSession(c *fiber.Ctx) error {
	cfg := &kit.SaleOf(c).Config
	jti := c.Params("jti")
	if !validJTI(jti) {
		return kit.BadRequest("jti must be 1 to 64 characters of base64url (the admission token's jti claim)")
	}
	if err := s.shopAuth(c, cfg); err != nil {
		return err
	}
	if s.deps.Sessions == nil {
		return kit.RetryLater("degraded", "checkout sessions are not kept on this node", 1)
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	f, err := s.deps.Sessions.Finish(ctx, cfg.ID, jti)
	if err != nil {
		return err // kit.ToProblem: an unknown session, or a backing service
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"jti": strings.Clone(jti), "position": f.Position, "finished": true, "replay": f.Replay})
}

// healthPush is the body of POST /events/{id}/health: exactly one of the
// fields.
type healthPush struct {
	ErrorRate *float64 `json:"error_rate"`
	Healthy   *bool    `json:"healthy"`
}

// pushHealth answers POST /events/{id}/health: one health observation from
// the shop, counted toward the sale's fail_after and recover_after.
func (s *API) pushHealth(c *fiber.Ctx) error {
	cfg := &kit.SaleOf(c).Config
	if err := s.shopAuth(c, cfg); err != nil {
		return err
	}
	h := cfg.Shop.Health
	if h == nil {
		return kit.NewProblem(fiber.StatusConflict, "not_configured", "this sale has no shop.health check")
	}
	var in healthPush
	dec := json.NewDecoder(bytes.NewReader(c.Body()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return kit.BadRequest("malformed health JSON: %s", kit.JSONProblem(err))
	}
	if dec.More() {
		return kit.BadRequest("malformed health JSON: trailing data")
	}
	var o admission.Observation
	switch {
	case (in.ErrorRate == nil) == (in.Healthy == nil):
		return kit.BadRequest("send exactly one of error_rate (0 to 1) and healthy (true or false)")
	case in.ErrorRate != nil:
		r := *in.ErrorRate
		if !(r >= 0 && r <= 1) {
			return kit.BadRequest("error_rate must be between 0 and 1")
		}
		o = admission.Observation{Healthy: r <= h.MaxErrorRate, Source: "push",
			Detail: fmt.Sprintf("error rate %.3f (max %.3f)", r, h.MaxErrorRate)}
	default:
		o = admission.Observation{Healthy: *in.Healthy, Source: "push", Detail: "healthy " + strconv.FormatBool(*in.Healthy)}
	}
	if s.deps.Health == nil {
		return kit.RetryLater("degraded", "health signals are not kept on this node", 1)
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	held, changed, err := s.deps.Health.Observe(ctx, cfg.ID, h, o)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"healthy": o.Healthy, "held": held, "changed": changed})
}
