package event

import (
	"fmt"
	"regexp"
	"slices"
)

// Signals say where a sale's per-person signals come from: a device id, a
// payment fingerprint, a phone and a shipping address (the shop
// normalises and hashes the last two before sending them). A signal
// without a source is never read: a client's own header names nothing,
// since a client can send a new value with every request. Limits count
// claims per signal value (Limits.SignalClaims); a limit on a signal
// without a source is refused at save.
type Signals struct {
	// Device is the device id's source.
	Device *SignalSource `json:"device,omitempty"`
	// Payment is the payment fingerprint's source.
	Payment *SignalSource `json:"payment,omitempty"`
	// Phone is the (shop-hashed) phone number's source.
	Phone *SignalSource `json:"phone,omitempty"`
	// Address is the (shop-hashed) shipping address's source.
	Address *SignalSource `json:"address,omitempty"`
	// SweepClaims name claims of the shop's identity token (identity
	// mode jwt) whose values each claim records, as keyed hashes, for the
	// sweep to group by (a verified phone, a loyalty id): at most
	// MaxSweepClaims names of 1 to 64 of A-Z a-z 0-9 _ . / -. They limit
	// nothing; a claim whose token lacks one records none for it.
	//
	// Default: none
	SweepClaims []string `json:"sweep_claims,omitempty"`
}

// MaxSweepClaims bounds Signals.SweepClaims.
const MaxSweepClaims = 4

var sweepClaimPattern = regexp.MustCompile(`^[A-Za-z0-9_./-]{1,64}$`)

// Signal sources.
const (
	// SourceJWTClaim reads a named claim of the shop's identity token
	// (identity mode jwt): the token is signed, so the claim is the
	// shop's word.
	SourceJWTClaim = "jwt_claim"
	// SourceSignedHeader reads a header the shop signs for this sale,
	// user and moment with the sale's shop.secret (see web/protect's
	// signals.go for the format).
	SourceSignedHeader = "signed_header"
	// SourceProxyHeader reads a header set by a trusted proxy
	// (ANTEROOM_TRUSTED_PROXIES), believed from those peers only; the
	// proxy must replace any value the client sent.
	SourceProxyHeader = "proxy_header"
	// SourceAttestation (device only) is the App Attest key the request
	// proved it holds (Config.Attestation): a key made in the phone's
	// Secure Enclave, which cannot be copied to another phone.
	SourceAttestation = "attestation"
)

// SignalSource is where one signal is read.
type SignalSource struct {
	// Source is jwt_claim, signed_header, proxy_header or (device only)
	// attestation.
	Source string `json:"source"`
	// Claim names the identity token's claim (jwt_claim only; required).
	Claim string `json:"claim,omitempty"`
	// Header names the header (signed_header and proxy_header).
	//
	// Default: the signal's default header (SignalHeader)
	Header string `json:"header,omitempty"`
}

// SignalHeader is the default header of each signal.
var SignalHeader = map[string]string{
	"device": "X-Device-ID", "payment": "X-Payment-Fingerprint",
	"phone": "X-Phone-Hash", "address": "X-Address-Hash",
}

// Each calls f with each signal's name and source (nil: none), in the
// order device, payment, phone, address.
func (s *Signals) Each(f func(name string, src *SignalSource)) {
	f("device", s.Device)
	f("payment", s.Payment)
	f("phone", s.Phone)
	f("address", s.Address)
}

// Source returns signal name's source, or nil.
func (s *Signals) Source(name string) *SignalSource {
	var out *SignalSource
	s.Each(func(n string, src *SignalSource) {
		if n == name {
			out = src
		}
	})
	return out
}

// SignalLimits are the claims allowed at once per signal value (pending
// or confirmed: a released claim gives its count back); 0 is no limit.
type SignalLimits struct {
	Device  int64 `json:"device,omitempty"`
	Payment int64 `json:"payment,omitempty"`
	Phone   int64 `json:"phone,omitempty"`
	Address int64 `json:"address,omitempty"`
}

// Each calls f with each signal's name and limit, in the order device,
// payment, phone, address.
func (l SignalLimits) Each(f func(name string, max int64)) {
	f("device", l.Device)
	f("payment", l.Payment)
	f("phone", l.Phone)
	f("address", l.Address)
}

// Any reports whether any signal is limited.
func (l SignalLimits) Any() bool { return l != (SignalLimits{}) }

// MaxSignalClaims bounds a signal's limit.
const MaxSignalClaims = 100

var (
	claimNamePattern  = regexp.MustCompile(`^[A-Za-z0-9_.:/-]{1,64}$`)
	headerNamePattern = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)
)

// validateSignals checks each source's shape, and that every limited
// signal has a source and the sale one bucket: a signal's count lives
// under the bucket's hash tag, and two users sharing a signal may have
// different home buckets.
func (c *Config) validateSignals() error {
	var err error
	c.Signals.Each(func(name string, src *SignalSource) {
		if err != nil || src == nil {
			return
		}
		field := "signals." + name
		switch src.Source {
		case SourceJWTClaim:
			if !claimNamePattern.MatchString(src.Claim) || src.Header != "" {
				err = fmt.Errorf("%w: %s: source jwt_claim needs claim (1 to 64 of A-Z a-z 0-9 _ . : / -) and no header", ErrInvalid, field)
			}
		case SourceSignedHeader, SourceProxyHeader:
			if src.Claim != "" || (src.Header != "" && !headerNamePattern.MatchString(src.Header)) {
				err = fmt.Errorf("%w: %s: source %s takes a header name (A-Z a-z 0-9 -) and no claim", ErrInvalid, field, src.Source)
			}
			if src.Source == SourceSignedHeader && c.Shop.Secret == "" {
				err = fmt.Errorf("%w: %s: source signed_header needs shop.secret, which signs it", ErrInvalid, field)
			}
		case SourceAttestation:
			if name != "device" || src.Claim != "" || src.Header != "" {
				err = fmt.Errorf("%w: %s: source attestation is the device's only, with no claim and no header", ErrInvalid, field)
			}
		default:
			err = fmt.Errorf("%w: %s.source must be %s, %s, %s or (device) %s", ErrInvalid, field, SourceJWTClaim, SourceSignedHeader, SourceProxyHeader, SourceAttestation)
		}
	})
	if err != nil {
		return err
	}
	if len(c.Signals.SweepClaims) > MaxSweepClaims {
		return fmt.Errorf("%w: signals.sweep_claims: at most %d claims", ErrInvalid, MaxSweepClaims)
	}
	for i, name := range c.Signals.SweepClaims {
		if !sweepClaimPattern.MatchString(name) || slices.Contains(c.Signals.SweepClaims[:i], name) {
			return fmt.Errorf("%w: signals.sweep_claims[%d]: a claim name of 1 to 64 of A-Z a-z 0-9 _ . / -, each once", ErrInvalid, i)
		}
	}
	c.Limits.SignalClaims.Each(func(name string, max int64) {
		switch {
		case err != nil || max == 0:
		case max < 0 || max > MaxSignalClaims:
			err = fmt.Errorf("%w: limits.signal_claims.%s must be between 0 (no limit) and %d", ErrInvalid, name, MaxSignalClaims)
		case c.Signals.Source(name) == nil:
			err = fmt.Errorf("%w: limits.signal_claims.%s limits claims per %s, but the %s signal has no trusted source: set signals.%s.source to %s, %s or %s (a client's own header is never believed)",
				ErrInvalid, name, name, name, name, SourceJWTClaim, SourceSignedHeader, SourceProxyHeader)
		case c.Buckets != 1:
			err = fmt.Errorf("%w: limits.signal_claims.%s needs buckets 1: a signal's claims are counted in the bucket's Redis slot, atomically with the claim", ErrInvalid, name)
		}
	})
	return err
}

// CheckSignalSources refuses (ErrInvalid, naming the signal) a source this
// node can never believe: a proxy_header where it trusts no proxy, a
// jwt_claim where its identity mode reads no token claims (not jwt).
// Staff learn it at save, not from every claim's 403.
func CheckSignalSources(c *Config, trustsProxies, tokenClaims bool) error {
	var err error
	c.Signals.Each(func(name string, src *SignalSource) {
		switch {
		case err != nil || src == nil:
		case src.Source == SourceProxyHeader && !trustsProxies:
			err = fmt.Errorf("%w: signals.%s: source proxy_header, but this node trusts no proxy (ANTEROOM_TRUSTED_PROXIES)", ErrInvalid, name)
		case src.Source == SourceJWTClaim && !tokenClaims:
			err = fmt.Errorf("%w: signals.%s: source jwt_claim, but this node's identity mode reads no token claims (ANTEROOM_IDENTITY=jwt)", ErrInvalid, name)
		}
	})
	if err == nil && len(c.Signals.SweepClaims) > 0 && !tokenClaims {
		err = fmt.Errorf("%w: signals.sweep_claims: this node's identity mode reads no token claims (ANTEROOM_IDENTITY=jwt)", ErrInvalid)
	}
	return err
}
