package playintegrity

import (
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Policy is what a sale requires of a token's verdicts. Its zero value is
// the secure default: the app PLAY_RECOGNIZED, the device
// MEETS_DEVICE_INTEGRITY, any licensing, any signing certificate (Play
// recognition already checks it). Anything weaker is asked for by name.
// A Policy is a value: safe to share between goroutines once built.
type Policy struct {
	// AllowUnrecognizedVersion accepts the app verdict UNRECOGNIZED_VERSION
	// as well as PLAY_RECOGNIZED: a build Google Play does not know
	// (sideloaded, or a version not yet on Play). UNEVALUATED is never
	// accepted.
	//
	// Default: false
	AllowUnrecognizedVersion bool

	// Device is the device labels that must all be present in
	// deviceRecognitionVerdict. Empty means MEETS_DEVICE_INTEGRITY; to
	// accept rooted phones and emulators, name MEETS_BASIC_INTEGRITY.
	//
	// Default: [MEETS_DEVICE_INTEGRITY]
	Device []DeviceLabel

	// RequireLicensed requires the account verdict LICENSED.
	//
	// Default: false
	RequireLicensed bool

	// CertificateDigests, when not empty, is the allow list of the app's
	// signing certificates' SHA-256: one of the token's digests must be
	// on it. Each is base64 (Google's base64url or standard) or hex, colons
	// allowed (the Play Console's "SHA-256 certificate fingerprint").
	//
	// Default: none (no list)
	CertificateDigests []string
}

// Validate says what is wrong with p, naming the field: an unknown device
// label or a certificate digest that is not 32 bytes. A sale saves a
// policy only once Validate passes; Verify fails closed on one that does
// not (an unknown label is never present, a bad digest never matches).
func (p Policy) Validate() error {
	for _, l := range p.Device {
		switch l {
		case MeetsBasicIntegrity, MeetsDeviceIntegrity, MeetsStrongIntegrity:
		default:
			return fmt.Errorf("play integrity policy: device label %q is not one of %s, %s, %s",
				l, MeetsBasicIntegrity, MeetsDeviceIntegrity, MeetsStrongIntegrity)
		}
	}
	for i, d := range p.CertificateDigests {
		if _, err := parseDigest(d); err != nil {
			return fmt.Errorf("play integrity policy: certificate digest %d: %w", i+1, err)
		}
	}
	return nil
}

// check applies p to a verdict whose signature and request already
// passed; each refusal wraps ErrAttestation and names the verdict.
func (p Policy) check(v Verdict) error {
	switch {
	case v.App == AppPlayRecognized:
	case v.App == AppUnrecognizedVersion && p.AllowUnrecognizedVersion:
	default:
		return fmt.Errorf("%w: app verdict %q", ErrAttestation, v.App)
	}
	need := p.Device
	if len(need) == 0 {
		need = []DeviceLabel{MeetsDeviceIntegrity}
	}
	for _, l := range need {
		if !slices.Contains(v.Device, l) {
			return fmt.Errorf("%w: device verdict %q lacks %s", ErrAttestation, v.Device, l)
		}
	}
	if p.RequireLicensed && v.Licensing != Licensed {
		return fmt.Errorf("%w: licensing verdict %q", ErrAttestation, v.Licensing)
	}
	if len(p.CertificateDigests) > 0 && !p.certificateAllowed(v.CertificateDigests) {
		return fmt.Errorf("%w: no signing certificate on the allow list", ErrAttestation)
	}
	return nil
}

// certificateAllowed reports whether one of the token's digests is on the
// allow list.
func (p Policy) certificateAllowed(got []string) bool {
	for _, g := range got {
		gb, err := decodeBase64(g)
		if err != nil || len(gb) != 32 {
			continue
		}
		for _, w := range p.CertificateDigests {
			wb, err := parseDigest(w)
			if err == nil && subtle.ConstantTimeCompare(gb, wb) == 1 {
				return true
			}
		}
	}
	return false
}

// parseDigest decodes a SHA-256 digest written in hex (64 digits, colons
// allowed) or base64 (43 or 44 characters).
func parseDigest(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	var b []byte
	var err error
	if h := strings.ReplaceAll(s, ":", ""); len(h) == 64 {
		b, err = hex.DecodeString(h)
	} else {
		b, err = decodeBase64(s)
	}
	if err != nil || len(b) != 32 {
		return nil, errors.New("not a SHA-256 digest in hex or base64")
	}
	return b, nil
}
