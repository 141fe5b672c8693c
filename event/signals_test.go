package event

import (
	"errors"
	"strings"
	"testing"
)

// TestValidateSignals: every limited signal needs a trusted source (the
// refusal names the signal), a source's shape is checked, a signed
// header needs the shop secret that signs it, and signal limits need one
// bucket; one_claim_per_device and one_claim_per_payment are limits of 1.
func TestValidateSignals(t *testing.T) {
	src := func(s, claim, header string) *SignalSource {
		return &SignalSource{Source: s, Claim: claim, Header: header}
	}
	cases := []struct {
		name   string
		change func(*Config)
		want   string // substring of the error, "" for valid
	}{
		{"no signals", func(*Config) {}, ""},
		{"sources without limits", func(c *Config) { c.Signals.Phone = src(SourceProxyHeader, "", "") }, ""},
		{"device limit, no source", func(c *Config) { c.Limits.SignalClaims.Device = 1 }, "limits.signal_claims.device limits claims per device, but the device signal has no trusted source"},
		{"one claim per payment, no source", func(c *Config) { c.Limits.OneClaimPerPayment = true; c.Limits.Defaults() }, "the payment signal has no trusted source"},
		{"address limit, phone source", func(c *Config) {
			c.Signals.Phone = src(SourceProxyHeader, "", "")
			c.Limits.SignalClaims.Address = 2
		}, "signal_claims.address"},
		{"jwt claim", func(c *Config) {
			c.Signals.Device = src(SourceJWTClaim, "device_id", "")
			c.Limits.SignalClaims.Device = 1
		}, ""},
		{"jwt without claim", func(c *Config) { c.Signals.Device = src(SourceJWTClaim, "", "") }, "signals.device: source jwt_claim needs claim"},
		{"jwt with header", func(c *Config) { c.Signals.Device = src(SourceJWTClaim, "d", "X-D") }, "signals.device"},
		{"signed without secret", func(c *Config) { c.Signals.Payment = src(SourceSignedHeader, "", "") }, "needs shop.secret"},
		{"signed", func(c *Config) {
			c.Shop.Secret = strings.Repeat("s", 32)
			c.Signals.Payment = src(SourceSignedHeader, "", "X-Card")
			c.Limits.SignalClaims.Payment = 3
		}, ""},
		{"bad header", func(c *Config) { c.Signals.Phone = src(SourceProxyHeader, "", "X Phone") }, "signals.phone"},
		{"proxy with claim", func(c *Config) { c.Signals.Phone = src(SourceProxyHeader, "c", "") }, "signals.phone"},
		{"unknown source", func(c *Config) { c.Signals.Address = src("client_header", "", "") }, "signals.address.source must be"},
		{"limit too high", func(c *Config) {
			c.Signals.Address = src(SourceProxyHeader, "", "")
			c.Limits.SignalClaims.Address = MaxSignalClaims + 1
		}, "limits.signal_claims.address must be between"},
		{"negative limit", func(c *Config) { c.Limits.SignalClaims.Phone = -1 }, "limits.signal_claims.phone"},
		{"several buckets", func(c *Config) {
			c.Buckets = 2
			c.Signals.Device = src(SourceProxyHeader, "", "")
			c.Limits.SignalClaims.Device = 1
		}, "needs buckets 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.change(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tc.want != "" && (err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
	var l Limits
	l.OneClaimPerDevice = true
	l.Defaults()
	if l.SignalClaims != (SignalLimits{Device: 1}) {
		t.Fatalf("one_claim_per_device defaults signal_claims to %+v, want device 1", l.SignalClaims)
	}
}
