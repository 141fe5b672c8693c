package event

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckAttestation: an Android app needs the node's Play Integrity
// keys; an iOS app does not.
func TestCheckAttestation(t *testing.T) {
	android := &Config{Attestation: Attestation{Google: &GoogleAttestation{PackageName: "com.example.shop"}}}
	if err := CheckAttestation(android, false); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an Android app without Play keys: %v, want ErrInvalid", err)
	}
	if err := CheckAttestation(android, true); err != nil {
		t.Fatalf("an Android app with Play keys: %v", err)
	}
	ios := &Config{Attestation: Attestation{Apple: &AppleAttestation{AppID: "ABCDE12345.com.example.shop"}}}
	if err := CheckAttestation(ios, false); err != nil {
		t.Fatalf("an iOS app: %v", err)
	}
}

// TestValidateAttestation: each malformed block is refused, naming its
// field; a good one passes.
func TestValidateAttestation(t *testing.T) {
	apple := &AppleAttestation{AppID: "ABCDE12345.com.example.shop"}
	for _, tc := range []struct {
		name string
		a    Attestation
		dev  *SignalSource
		want string // "" passes
	}{
		{"apple", Attestation{Require: true, Apple: apple}, nil, ""},
		{"device from apple", Attestation{Require: true, Apple: apple}, &SignalSource{Source: SourceAttestation}, ""},
		{"require alone", Attestation{Require: true}, nil, "attestation.require"},
		{"lower-case team", Attestation{Apple: &AppleAttestation{AppID: "abcde12345.com.x"}}, nil, "attestation.apple.app_id"},
		{"no bundle", Attestation{Apple: &AppleAttestation{AppID: "ABCDE12345."}}, nil, "attestation.apple.app_id"},
		{"bad package", Attestation{Google: &GoogleAttestation{PackageName: "shop"}}, nil, "attestation.google.package_name"},
		{"bad label", Attestation{Google: &GoogleAttestation{PackageName: "com.x.y", Verdicts: GoogleVerdicts{Device: []string{"ROOTED"}}}}, nil, "attestation.google.verdicts"},
		{"bad digest", Attestation{Google: &GoogleAttestation{PackageName: "com.x.y", Verdicts: GoogleVerdicts{CertificateDigests: []string{"abc"}}}}, nil, "attestation.google.verdicts"},
		{"device, not required", Attestation{Apple: apple}, &SignalSource{Source: SourceAttestation}, "signals.device"},
		{"device with android", Attestation{Require: true, Apple: apple, Google: &GoogleAttestation{PackageName: "com.x.y"}}, &SignalSource{Source: SourceAttestation}, "signals.device"},
	} {
		c := &Config{Attestation: tc.a, Signals: Signals{Device: tc.dev}}
		err := c.validateAttestation()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want ErrInvalid naming %s", tc.name, err, tc.want)
		}
	}
}
