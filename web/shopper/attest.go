package shopper

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"time"

	"github.com/anteroom/anteroom/attest/device"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// attester is the sales' device attestation (*device.Service).
type attester interface {
	Challenge(ev string, now time.Time) string
	RegisterApple(ctx context.Context, cfg *event.Config, keyID string, object []byte, challenge string) ([]byte, error)
	Check(ctx context.Context, cfg *event.Config, r device.Request) (device.Proof, error)
}

// ChallengeTTL is how long an attestation challenge is good for: the
// node's device.Config.ChallengeTTL, which the node wires to it.
const ChallengeTTL = 2 * time.Minute

var errNoAttestation = kit.NewProblem(fiber.StatusNotFound, "not_found", "this sale has no app attestation (attestation.apple or attestation.google)")

var errRegistering = kit.RetryLater("degraded", "this node is verifying as many App Attest registrations as it takes at once: retry in a second", 1)

type challengeJSON struct {
	Challenge        string `json:"challenge"`
	ExpiresInSeconds int    `json:"expires_in_seconds"`
}

// attestChallenge issues a one-time challenge for an attestation object
// or for the assertion or integrity token of one join or claim. Issuing
// writes nothing: the challenge is signed (package attest/device).
func (s *API) attestChallenge(c *fiber.Ctx) error {
	cfg := &kit.SaleOf(c).Config
	if cfg.Attestation.Apple == nil && cfg.Attestation.Google == nil {
		return errNoAttestation
	}
	if s.deps.Attest == nil {
		return kit.RetryLater("degraded", "device attestation is not available on this node", 1)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(challengeJSON{Challenge: s.deps.Attest.Challenge(cfg.ID, s.now()), ExpiresInSeconds: int(ChallengeTTL / time.Second)})
}

type appleAttestJSON struct {
	KeyID       string `json:"key_id"`
	Attestation string `json:"attestation"`
	Challenge   string `json:"challenge"`
}

// attestApple registers an iOS app's App Attest key: its attestation
// object, verified for the sale's App ID and a challenge, spends the
// challenge and stores the key for its assertions.
func (s *API) attestApple(c *fiber.Ctx) error {
	cfg := &kit.SaleOf(c).Config
	if cfg.Attestation.Apple == nil {
		return errNoAttestation
	}
	if s.deps.Attest == nil {
		return kit.RetryLater("degraded", "device attestation is not available on this node", 1)
	}
	// At most half the node's CPUs verify registrations at once; more
	// wait their turn elsewhere (503, retry in a second), so a flood of
	// attestation objects cannot starve joins and claims.
	select {
	case s.registering <- struct{}{}:
		defer func() { <-s.registering }()
	default:
		return errRegistering
	}
	var in appleAttestJSON
	if err := kit.DecodeStrict(c, "attestation", &in); err != nil {
		return err
	}
	obj, err := base64.StdEncoding.DecodeString(in.Attestation)
	if err != nil || len(obj) == 0 {
		return kit.BadRequest("attestation must be the attestation object in base64")
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	id, err := s.deps.Attest.RegisterApple(ctx, cfg, in.KeyID, obj, in.Challenge)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(fiber.StatusCreated).JSON(map[string]string{"key_id": base64.StdEncoding.EncodeToString(id)})
}

// attested checks a join's or claim's device attestation when sale cfg
// requires one, before anything else of the request is recorded: a
// missing, failed or replayed attestation is the error to answer (403
// attestation_failed, 400 when unreadable) and nothing is written. An
// App Attest key that passed becomes the request's attested device
// (kit.SetAttestedDevice), the device signal of a sale that reads it from
// attestation.
func (s *API) attested(c *fiber.Ctx, cfg *event.Config) error {
	if !cfg.Attestation.Require {
		return nil
	}
	if s.deps.Attest == nil {
		return kit.RetryLater("degraded", "device attestation is not available on this node", 1)
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	p, err := s.deps.Attest.Check(ctx, cfg, device.Request{
		Event: cfg.ID, Method: c.Method(), Path: c.Path(), Body: c.Body(),
		Challenge: c.Get(device.ChallengeHeader), KeyID: c.Get(device.KeyIDHeader),
		Assertion: c.Get(device.AssertionHeader), Integrity: c.Get(device.IntegrityHeader),
	})
	if err != nil {
		return err
	}
	if p.KeyID != nil {
		kit.SetAttestedDevice(c, hex.EncodeToString(p.KeyID))
	}
	return nil
}
