package playintegrity

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// TestPolicy runs each verdict edit under each policy: the genuine
// verdict edited, then refused with ErrAttestation or passed.
func TestPolicy(t *testing.T) {
	f := newFixture(t)
	app := func(verdict string) func(map[string]any) {
		return func(v map[string]any) { section(v, "appIntegrity")["appRecognitionVerdict"] = verdict }
	}
	device := func(labels ...string) func(map[string]any) {
		return func(v map[string]any) {
			if labels == nil {
				delete(section(v, "deviceIntegrity"), "deviceRecognitionVerdict")
				return
			}
			section(v, "deviceIntegrity")["deviceRecognitionVerdict"] = labels
		}
	}
	licensing := func(verdict string) func(map[string]any) {
		return func(v map[string]any) {
			if verdict == "" {
				delete(v, "accountDetails")
				return
			}
			section(v, "accountDetails")["appLicensingVerdict"] = verdict
		}
	}
	certs := func(digests ...string) func(map[string]any) {
		return func(v map[string]any) { section(v, "appIntegrity")["certificateSha256Digest"] = digests }
	}
	certHex := hex.EncodeToString(testCert[:])
	var colons []string
	for i := 0; i < len(certHex); i += 2 {
		colons = append(colons, strings.ToUpper(certHex[i:i+2]))
	}
	other := strings.Repeat("ab", 32)
	certB64 := base64.RawURLEncoding.EncodeToString(testCert[:])

	cases := []struct {
		name   string
		edit   func(map[string]any)
		policy Policy
		pass   bool
	}{
		{"genuine, default policy", nil, Policy{}, true},
		{"unrecognized version, default policy", app("UNRECOGNIZED_VERSION"), Policy{}, false},
		{"unrecognized version, allowed by name", app("UNRECOGNIZED_VERSION"), Policy{AllowUnrecognizedVersion: true}, true},
		{"unevaluated app, unrecognized allowed", app("UNEVALUATED"), Policy{AllowUnrecognizedVersion: true}, false},
		{"unknown app verdict", app("play_recognized"), Policy{AllowUnrecognizedVersion: true}, false},
		{"no device label", device(), Policy{}, false},
		{"empty device labels", device([]string{}...), Policy{}, false},
		{"basic only, default policy", device("MEETS_BASIC_INTEGRITY"), Policy{}, false},
		{"basic only, basic asked for", device("MEETS_BASIC_INTEGRITY"), Policy{Device: []DeviceLabel{MeetsBasicIntegrity}}, true},
		{"virtual only, default policy", device("MEETS_VIRTUAL_INTEGRITY"), Policy{}, false},
		{"device, strong required", nil, Policy{Device: []DeviceLabel{MeetsStrongIntegrity}}, false},
		{"strong, device and basic, strong required", device("MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY", "MEETS_STRONG_INTEGRITY"), Policy{Device: []DeviceLabel{MeetsStrongIntegrity}}, true},
		{"strong only, strong and device required", device("MEETS_STRONG_INTEGRITY"), Policy{Device: []DeviceLabel{MeetsStrongIntegrity, MeetsDeviceIntegrity}}, false},
		{"label in another case", device("meets_device_integrity"), Policy{}, false},
		{"an unknown label required (fails closed)", nil, Policy{Device: []DeviceLabel{"MEETS_ANYTHING"}}, false},
		{"unlicensed, licensing not required", licensing("UNLICENSED"), Policy{}, true},
		{"unlicensed, licensing required", licensing("UNLICENSED"), Policy{RequireLicensed: true}, false},
		{"licensing unevaluated, required", licensing("UNEVALUATED"), Policy{RequireLicensed: true}, false},
		{"no account details, required", licensing(""), Policy{RequireLicensed: true}, false},
		{"licensed, required", nil, Policy{RequireLicensed: true}, true},
		{"certificate on the list (base64url)", nil, Policy{CertificateDigests: []string{other, certB64}}, true},
		{"certificate on the list (standard base64)", nil, Policy{CertificateDigests: []string{base64.StdEncoding.EncodeToString(testCert[:])}}, true},
		{"certificate on the list (console hex with colons)", nil, Policy{CertificateDigests: []string{strings.Join(colons, ":")}}, true},
		{"one of two certificates on the list", certs("garbage", certB64), Policy{CertificateDigests: []string{certHex}}, true},
		{"certificate not on the list", nil, Policy{CertificateDigests: []string{other}}, false},
		{"no certificate in the token, list set", certs(), Policy{CertificateDigests: []string{certHex}}, false},
		{"a truncated certificate, list set", certs(certB64[:20]), Policy{CertificateDigests: []string{certHex[:len(certHex)-2]}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			token := f.token(t, c.edit)
			if c.pass {
				if _, err := f.v.Verify(token, standard, c.policy, f.now); err != nil {
					t.Fatalf("Verify: %v, want a pass", err)
				}
				return
			}
			refused(t, f, token, standard, c.policy, ErrAttestation)
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	good := []Policy{
		{},
		{AllowUnrecognizedVersion: true, RequireLicensed: true},
		{Device: []DeviceLabel{MeetsBasicIntegrity, MeetsDeviceIntegrity, MeetsStrongIntegrity}},
		{CertificateDigests: []string{strings.Repeat("0f", 32), base64.RawURLEncoding.EncodeToString(testCert[:])}},
	}
	for _, p := range good {
		if err := p.Validate(); err != nil {
			t.Errorf("Validate(%+v): %v", p, err)
		}
	}
	bad := []struct {
		p    Policy
		says string
	}{
		{Policy{Device: []DeviceLabel{"MEETS_VIRTUAL_INTEGRITY"}}, `device label "MEETS_VIRTUAL_INTEGRITY"`},
		{Policy{Device: []DeviceLabel{""}}, `device label ""`},
		{Policy{CertificateDigests: []string{strings.Repeat("0f", 31)}}, "certificate digest 1"},
		{Policy{CertificateDigests: []string{strings.Repeat("0f", 32), "zz" + strings.Repeat("0f", 31)}}, "certificate digest 2"},
		{Policy{CertificateDigests: []string{""}}, "certificate digest 1"},
	}
	for _, c := range bad {
		err := c.p.Validate()
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Validate(%+v): %v, want an error saying %s", c.p, err, c.says)
		}
		if errors.Is(err, ErrAttestation) || errors.Is(err, ErrMalformed) {
			t.Errorf("Validate: %v matches a verification sentinel", err)
		}
	}
}
