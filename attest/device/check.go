package device

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/anteroom/anteroom/attest/appattest"
	"github.com/anteroom/anteroom/attest/playintegrity"
	"github.com/anteroom/anteroom/event"
)

// Platform names what attested a request.
type Platform string

// The platforms.
const (
	Apple  Platform = "apple"
	Google Platform = "google"
)

// Proof is what a checked request proved.
type Proof struct {
	// Platform is the attestation that passed.
	Platform Platform
	// KeyID is the App Attest key (Apple only): the device signal of a
	// sale that reads its device from attestation. A Play Integrity
	// token names no device: nil.
	KeyID []byte
}

// Check verifies r's attestation for sale cfg and spends its challenge.
// It returns ErrRequired when r carries none; ErrMalformed (or the attest
// packages' ErrMalformed) when it cannot be read; ErrChallenge,
// appattest.ErrAttestation or ErrReplay, or playintegrity.ErrAttestation
// when it fails. A failed check writes nothing.
func (s *Service) Check(ctx context.Context, cfg *event.Config, r Request) (Proof, error) {
	apple := r.KeyID != "" || r.Assertion != ""
	switch {
	case !r.Presented():
		return Proof{}, ErrRequired
	case apple && r.Integrity != "":
		return Proof{}, fmt.Errorf("%w: both an App Attest assertion and a Play Integrity token", ErrMalformed)
	case !apple && r.Integrity == "":
		return Proof{}, fmt.Errorf("%w: a challenge without an assertion or integrity token", ErrMalformed)
	}
	markFor, err := s.openChallenge(cfg.ID, r.Challenge, s.cfg.Clock())
	if err != nil {
		return Proof{}, err
	}
	if apple {
		return s.checkApple(ctx, cfg, r, markFor)
	}
	return s.checkGoogle(ctx, cfg, r, markFor)
}

// checkApple verifies an App Attest assertion by a registered key, then
// spends the challenge and advances the key's counter in one script.
func (s *Service) checkApple(ctx context.Context, cfg *event.Config, r Request, markFor time.Duration) (Proof, error) {
	if cfg.Attestation.Apple == nil {
		return Proof{}, fmt.Errorf("%w: this sale has no iOS app (attestation.apple)", appattest.ErrAttestation)
	}
	id, err := decodeKeyID(r.KeyID)
	if err != nil {
		return Proof{}, err
	}
	assertion, err := base64.StdEncoding.DecodeString(r.Assertion)
	if err != nil {
		return Proof{}, fmt.Errorf("%w: %s is not base64", ErrMalformed, AssertionHeader)
	}
	v, err := s.appleVerifier(cfg.Attestation.Apple)
	if err != nil {
		return Proof{}, err
	}
	stored, last, err := s.key(ctx, cfg.ID, id)
	if err != nil {
		return Proof{}, err
	}
	counter, err := v.VerifyAssertion(stored, last, assertion, ClientData(r.Event, r.Method, r.Path, r.Challenge, r.Body))
	if err != nil {
		return Proof{}, err
	}
	if err := appattest.Advance(ctx, counters{s: s, ev: cfg.ID, challenge: r.Challenge, markFor: markFor}, id, counter); err != nil {
		return Proof{}, err
	}
	return Proof{Platform: Apple, KeyID: id}, nil
}

// key reads an attested key of sale ev and its last counter.
func (s *Service) key(ctx context.Context, ev string, id []byte) (appattest.Key, uint32, error) {
	vals, err := s.rdb.HMGet(ctx, deviceKey(ev, id), "pub", "n").Result()
	if err != nil {
		return appattest.Key{}, 0, fmt.Errorf("device: read key: %w", err)
	}
	pub, _ := vals[0].(string)
	n, _ := vals[1].(string)
	if pub == "" || n == "" {
		return appattest.Key{}, 0, fmt.Errorf("%w: key not attested for this sale: attest it first", appattest.ErrAttestation)
	}
	key, err := appattest.ParseKey([]byte(pub))
	if err != nil {
		return appattest.Key{}, 0, err
	}
	var last uint64
	if _, err := fmt.Sscan(n, &last); err != nil || last > 1<<32-1 {
		return appattest.Key{}, 0, fmt.Errorf("device: stored counter %q", n)
	}
	return key, uint32(last), nil
}

// counters is the appattest.CounterStore of one request: AdvanceCounter
// stores the counter only if it exceeds the stored one AND the request's
// challenge is still unspent, spending it in the same script (assert.lua).
type counters struct {
	s         *Service
	ev        string
	challenge string
	markFor   time.Duration
}

// AdvanceCounter implements appattest.CounterStore.
func (c counters) AdvanceCounter(ctx context.Context, keyID []byte, counter uint32) (bool, error) {
	res, err := c.s.assert.Run(ctx, c.s.rdb, []string{spentKey(c.ev, c.challenge), deviceKey(c.ev, keyID)}, counter, c.markFor.Milliseconds()+1).Int64()
	if err != nil {
		return false, err
	}
	switch res {
	case 1:
		return true, nil
	case 0:
		return false, fmt.Errorf("%w: spent before", ErrChallenge)
	case -1:
		return false, fmt.Errorf("%w: key expired meanwhile", appattest.ErrAttestation)
	}
	return false, nil // -2: the counter did not grow (appattest.ErrReplay)
}

// checkGoogle verifies a Play Integrity token bound to the request's
// RequestHash, then spends the challenge.
func (s *Service) checkGoogle(ctx context.Context, cfg *event.Config, r Request, markFor time.Duration) (Proof, error) {
	g := cfg.Attestation.Google
	if g == nil {
		return Proof{}, fmt.Errorf("%w: this sale has no Android app (attestation.google)", playintegrity.ErrAttestation)
	}
	v, err := s.googleVerifier(g.PackageName)
	if err != nil {
		return Proof{}, err
	}
	want := playintegrity.Expect{RequestHash: RequestHash(r.Event, r.Method, r.Path, r.Challenge, r.Body)}
	if _, err := v.Verify(r.Integrity, want, g.Verdicts.Policy(), s.cfg.Clock()); err != nil {
		return Proof{}, err
	}
	fresh, err := s.rdb.SetNX(ctx, spentKey(cfg.ID, r.Challenge), 1, markFor+time.Millisecond).Result()
	if err != nil {
		return Proof{}, fmt.Errorf("device: spend challenge: %w", err)
	}
	if !fresh {
		return Proof{}, fmt.Errorf("%w: spent before", ErrChallenge)
	}
	return Proof{Platform: Google}, nil
}
