package event

import (
	"fmt"
	"regexp"

	"github.com/anteroom/anteroom/attest/playintegrity"
)

// Attestation is a sale's device attestation: Apple App Attest for its
// iOS app, Google Play Integrity for its Android app (package
// attest/device verifies both for a sale). With Require, every join and
// claim must carry a valid attestation: the sale is sold through the
// shop's apps only, and a browser (which cannot attest) is refused 403
// attestation_failed. Telling an app from a browser by what the request
// says about itself would let a script say it is a browser, so the
// requirement is the sale's, never the request's.
type Attestation struct {
	// Require refuses every join and claim that carries no valid
	// attestation (Apple) or integrity token (Google): 403
	// attestation_failed, nothing recorded. Without it the attestation
	// routes answer, but joins and claims ignore attestation.
	//
	// Default: false
	Require bool `json:"require,omitempty"`
	// Apple is the iOS app; nil: no iOS app attests.
	Apple *AppleAttestation `json:"apple,omitempty"`
	// Google is the Android app; nil: no Android app attests.
	Google *GoogleAttestation `json:"google,omitempty"`
}

// AppleAttestation names the iOS app whose App Attest keys a sale
// accepts.
type AppleAttestation struct {
	// AppID is the app's App ID: its 10-character Team ID, a dot and its
	// bundle id (ABCDE12345.com.example.shop). Required.
	AppID string `json:"app_id"`
	// Development accepts keys from Apple's development environment as
	// well as production ones: a build signed for development, which
	// proves much less. Asked for by name, never for a real sale.
	//
	// Default: false
	Development bool `json:"development,omitempty"`
}

// GoogleAttestation names the Android app whose Play Integrity tokens a
// sale accepts, and the verdicts it requires. The operator's decryption
// and verification keys are the node's (ANTEROOM_PLAY_INTEGRITY_*).
type GoogleAttestation struct {
	// PackageName is the app's package name (com.example.shop). Required.
	PackageName string `json:"package_name"`
	// Verdicts are what the token's verdicts must say.
	//
	// Default: the app PLAY_RECOGNIZED, the device MEETS_DEVICE_INTEGRITY
	Verdicts GoogleVerdicts `json:"verdicts,omitzero"`
}

// GoogleVerdicts is a sale's Play Integrity verdict policy (see
// playintegrity.Policy, whose zero value is the secure default).
type GoogleVerdicts struct {
	// AllowUnrecognizedVersion accepts the app verdict
	// UNRECOGNIZED_VERSION (a build Google Play does not know).
	//
	// Default: false
	AllowUnrecognizedVersion bool `json:"allow_unrecognized_version,omitempty"`
	// Device are the device labels that must all be present:
	// MEETS_BASIC_INTEGRITY, MEETS_DEVICE_INTEGRITY,
	// MEETS_STRONG_INTEGRITY.
	//
	// Default: [MEETS_DEVICE_INTEGRITY]
	Device []string `json:"device,omitempty"`
	// RequireLicensed requires the account verdict LICENSED.
	//
	// Default: false
	RequireLicensed bool `json:"require_licensed,omitempty"`
	// CertificateDigests is the allow list of the app's signing
	// certificates' SHA-256 (hex or base64).
	//
	// Default: none (any certificate Play recognises)
	CertificateDigests []string `json:"certificate_digests,omitempty"`
}

// Policy returns v as a playintegrity.Policy.
func (v GoogleVerdicts) Policy() playintegrity.Policy {
	p := playintegrity.Policy{
		AllowUnrecognizedVersion: v.AllowUnrecognizedVersion,
		RequireLicensed:          v.RequireLicensed,
		CertificateDigests:       v.CertificateDigests,
	}
	for _, d := range v.Device {
		p.Device = append(p.Device, playintegrity.DeviceLabel(d))
	}
	return p
}

var (
	appIDPattern       = regexp.MustCompile(`^[A-Z0-9]{10}\.[A-Za-z0-9.-]{1,155}$`)
	packageNamePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$`)
)

// validateAttestation checks the attestation block, and that a device
// signal read from attestation has an app whose attestation names a
// device.
func (c *Config) validateAttestation() error {
	a := c.Attestation
	if a.Require && a.Apple == nil && a.Google == nil {
		return fmt.Errorf("%w: attestation.require needs attestation.apple or attestation.google: no app could attest", ErrInvalid)
	}
	if a.Apple != nil && !appIDPattern.MatchString(a.Apple.AppID) {
		return fmt.Errorf("%w: attestation.apple.app_id must be TEAMID.bundle.id (a 10-character Team ID of A-Z 0-9, a dot, a bundle id)", ErrInvalid)
	}
	if g := a.Google; g != nil {
		if len(g.PackageName) > 255 || !packageNamePattern.MatchString(g.PackageName) {
			return fmt.Errorf("%w: attestation.google.package_name must be an Android package name (com.example.shop)", ErrInvalid)
		}
		if len(g.Verdicts.CertificateDigests) > 16 || len(g.Verdicts.Device) > 3 {
			return fmt.Errorf("%w: attestation.google.verdicts: at most 3 device labels and 16 certificate digests", ErrInvalid)
		}
		if err := g.Verdicts.Policy().Validate(); err != nil {
			return fmt.Errorf("%w: attestation.google.verdicts: %v", ErrInvalid, err)
		}
	}
	if src := c.Signals.Device; src != nil && src.Source == SourceAttestation {
		switch {
		case !a.Require || a.Apple == nil:
			return fmt.Errorf("%w: signals.device: source attestation needs attestation.require and attestation.apple: the device is the App Attest key every join and claim proves", ErrInvalid)
		case a.Google != nil:
			return fmt.Errorf("%w: signals.device: source attestation names App Attest keys, and a Play Integrity token names no device: with attestation.google, read the device from the shop (signed_header, jwt_claim)", ErrInvalid)
		}
	}
	return nil
}

// CheckAttestation refuses (ErrInvalid) a sale this node cannot attest:
// an Android app (attestation.google) where the node has no Play
// Integrity keys, which would refuse every Android join and claim. Staff
// learn it at save.
func CheckAttestation(c *Config, playKeys bool) error {
	if c.Attestation.Google != nil && !playKeys {
		return fmt.Errorf("%w: attestation.google: this node has no Play Integrity keys (ANTEROOM_PLAY_INTEGRITY_DECRYPTION_KEY, ANTEROOM_PLAY_INTEGRITY_VERIFICATION_KEY)", ErrInvalid)
	}
	return nil
}
