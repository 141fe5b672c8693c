package protect

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/lifecycle"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Per-person signals (event.Signals): a claim's device, payment, phone
// and address, read only from the source the sale configures for each —
// the device may also be the App Attest key the request proved it holds —
// never from a client's own header, which a client can change with every
// request. What the edge hands the claim script is each value's keyed
// hash (HMAC-SHA256 under a key of this sale, derived from Config.Secret,
// the same on every node), never the value.
//
// A signed header carries "value=<v>,t=<unix seconds>,v1=<hex>": v1 is the
// shop's signature as on its other calls (HMAC-SHA256 keyed by the sale's
// shop.secret over "<t>.<message>", lifecycle.Sign), the message binding
// the signal's name, the event, the user and the value (signalMessage).
// It is good for SignalTolerance either side of the node's clock.

// SignalTolerance is how far a signed signal's timestamp may be from the
// node's clock: the shop signs a signal when it sends the shopper to
// claim.
const SignalTolerance = 5 * time.Minute

// SignSignal returns the signed header value of signal dim (device,
// payment, phone, address) with value for user in event ev at t, as a shop
// written in Go computes it.
func SignSignal(secret string, t time.Time, ev, user, dim, value string) string {
	sig := lifecycle.Sign(secret, t, signalMessage(ev, user, dim, value))
	return "value=" + value + "," + sig
}

// signalMessage is what a signed signal's signature covers beside its
// time. Its parts are joined by newlines, which none of them may contain.
func signalMessage(ev, user, dim, value string) []byte {
	return []byte("signal\n" + dim + "\n" + ev + "\n" + user + "\n" + value)
}

// Signals reads the signals sale cfg limits for user's claim, each from
// its configured source, and returns them with their limits as keyed
// hashes, ready for the claim script (which counts them atomically with
// the claim). It answers 400 for a signal that is missing or malformed,
// 401 bad_signal for a signed one whose signature is wrong, stale or made
// for another event, user or signal, and 403 untrusted_signal for one the
// node cannot believe (a proxy header from a peer that is not a trusted
// proxy, a token claim without jwt identity). A refused signal counts
// nothing.
//
// For the sweep (package claim's sweep.go) it also returns, limiting
// nothing (claim.NoLimit), the keyed hashes of each signal with a source
// and no limit (one missing or unbelievable is left out: it promised
// nothing), of the client's network (its /24, or /64 for IPv6, from the
// address the trusted proxies name) and of the identity token's claims
// the sale names (event.Signals.SweepClaims).
func (s *Edge) Signals(c *fiber.Ctx, cfg *event.Config, user string) ([]claim.Signal, error) {
	lim := cfg.Limits.SignalClaims
	var out []claim.Signal
	var claims map[string][]string // the identity token's, read once
	var err error
	lim.Each(func(dim string, max int64) {
		src := cfg.Signals.Source(dim)
		if err != nil || (max == 0 && src == nil) {
			return
		}
		if src == nil { // refused at save; a stored sale from before
			err = untrustedSignal(dim, "no source")
			return
		}
		var v string
		var rerr error
		switch src.Source {
		case event.SourceJWTClaim:
			if claims == nil {
				if claims, rerr = s.tokenClaims(c, cfg, user); rerr != nil {
					claims = nil
					break
				}
			}
			v, rerr = claimValue(claims, dim, src.Claim)
		case event.SourceSignedHeader:
			v, rerr = s.signedSignal(c, cfg, user, dim, headerOf(dim, src))
		case event.SourceProxyHeader:
			v, rerr = s.proxySignal(c, dim, headerOf(dim, src))
		case event.SourceAttestation:
			// The App Attest key the request proved it holds
			// (shopper's attested, before the signals are read).
			if v = kit.AttestedDevice(c); v == "" {
				rerr = kit.NewProblem(fiber.StatusForbidden, "attestation_failed",
					"this sale counts claims per attested device: the claim must carry an App Attest assertion")
			}
		default:
			rerr = untrustedSignal(dim, "no source")
		}
		switch {
		case rerr == nil && max == 0:
			// Recorded for the sweep, limiting nothing.
			out = append(out, claim.Signal{Dim: dim, Hash: s.signalHash(cfg.ID, dim, v), Max: claim.NoLimit})
		case rerr == nil:
			out = append(out, claim.Signal{Dim: dim, Hash: s.signalHash(cfg.ID, dim, v), Max: max})
		case max > 0:
			err = rerr
		}
		// A signal without a limit that is missing or unbelievable is
		// simply not recorded: it promised nothing.
	})
	if err != nil {
		return nil, err
	}
	if net := networkOf(s.proxies.ClientIP(c)); net != "" {
		out = append(out, claim.Signal{Dim: claim.SignalNetwork, Hash: s.signalHash(cfg.ID, claim.SignalNetwork, net), Max: claim.NoLimit})
	}
	if names := cfg.Signals.SweepClaims; len(names) > 0 {
		if claims == nil {
			claims, _ = s.sweepTokenClaims(c, names, user)
		}
		for _, name := range names {
			if vs := claims[name]; len(vs) == 1 && vs[0] != "" && len(vs[0]) <= 256 {
				dim := claim.SignalToken + name
				out = append(out, claim.Signal{Dim: dim, Hash: s.signalHash(cfg.ID, dim, vs[0]), Max: claim.NoLimit})
			}
		}
	}
	return out, nil
}

// sweepTokenClaims reads the identity token's claims names for the sweep,
// or nothing when the node's identity mode reads no token claims or the
// token names another user.
func (s *Edge) sweepTokenClaims(c *fiber.Ctx, names []string, user string) (map[string][]string, error) {
	id, ok := s.deps.Identity.(interface {
		UserClaims(c *fiber.Ctx, names []string) (string, map[string][]string, error)
	})
	if !ok {
		return nil, nil
	}
	u, claims, err := id.UserClaims(c, names)
	if err != nil || u != user {
		return nil, err
	}
	return claims, nil
}

// networkOf is the client's network as the sweep groups it: the /24 of an
// IPv4 address, the /64 of an IPv6 one; "" for what is not an address.
func networkOf(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	a = a.Unmap()
	bits := 64
	if a.Is4() {
		bits = 24
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return ""
	}
	return p.String()
}

func headerOf(dim string, src *event.SignalSource) string {
	if src.Header != "" {
		return src.Header
	}
	return event.SignalHeader[dim]
}

// tokenClaims returns every claim a jwt-identity node's token carries
// for the names the sale reads, verifying the token once more; the token
// must still name user.
func (s *Edge) tokenClaims(c *fiber.Ctx, cfg *event.Config, user string) (map[string][]string, error) {
	id, ok := s.deps.Identity.(interface {
		UserClaims(c *fiber.Ctx, names []string) (string, map[string][]string, error)
	})
	if !ok {
		return nil, kit.NewProblem(fiber.StatusForbidden, "untrusted_signal",
			"this sale reads signals from the identity token's claims, and this node's identity mode is not jwt")
	}
	names := slices.Clone(cfg.Signals.SweepClaims) // the sweep's too: one read
	cfg.Signals.Each(func(_ string, src *event.SignalSource) {
		if src != nil && src.Source == event.SourceJWTClaim {
			names = append(names, src.Claim)
		}
	})
	u, claims, err := id.UserClaims(c, names)
	if err != nil {
		return nil, err
	}
	if u != user {
		return nil, kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "the identity token names another user than the admission")
	}
	if claims == nil {
		claims = map[string][]string{}
	}
	return claims, nil
}

// claimValue is the one value of the token's claim name.
func claimValue(claims map[string][]string, dim, name string) (string, error) {
	vs := claims[name]
	if len(vs) != 1 || vs[0] == "" || len(vs[0]) > 256 {
		return "", kit.BadRequest("this sale limits claims per %s: the identity token must carry one %q claim of 1 to 256 characters", dim, name)
	}
	return vs[0], nil
}

// proxySignal reads header from a trusted proxy.
func (s *Edge) proxySignal(c *fiber.Ctx, dim, header string) (string, error) {
	if !s.proxies.TrustsPeer(c) {
		return "", untrustedSignal(dim, header)
	}
	v, err := oneHeader(c, header)
	if err != nil {
		return "", err
	}
	if v == "" {
		return "", kit.BadRequest("this sale limits claims per %s: the shop's gateway must send %s", dim, header)
	}
	if !callerValuePattern.MatchString(v) {
		return "", kit.BadRequest("%s must be 1 to 128 characters of A-Z a-z 0-9 . _ : + / = -", header)
	}
	return v, nil
}

// signedSignal reads header and checks the shop's signature over it for
// this event, user and signal.
func (s *Edge) signedSignal(c *fiber.Ctx, cfg *event.Config, user, dim, header string) (string, error) {
	raw, err := oneHeader(c, header)
	if err != nil {
		return "", err
	}
	if raw == "" {
		return "", kit.BadRequest("this sale limits claims per %s: send %s, signed by the shop", dim, header)
	}
	var v string
	for _, part := range strings.Split(raw, ",") {
		if k, val, _ := strings.Cut(strings.TrimSpace(part), "="); k == "value" {
			v = val
		}
	}
	if !callerValuePattern.MatchString(v) || cfg.Shop.Secret == "" ||
		lifecycle.Verify(cfg.Shop.Secret, raw, signalMessage(cfg.ID, user, dim, v), s.now(), SignalTolerance) != nil {
		return "", badSignal(dim, header)
	}
	return v, nil
}

// badSignal is the answer to a signed signal that is malformed, forged,
// stale or made for another event, user or signal.
func badSignal(dim, header string) *kit.Problem {
	return kit.NewProblem(fiber.StatusUnauthorized, "bad_signal", "the "+dim+" signal in "+header+
		" is malformed, wrongly signed, stale or signed for another sale or user: the shop signs value=<v>,t=<unix seconds>,v1=<HMAC-SHA256 of \"<t>.signal\\n"+dim+"\\n<event>\\n<user>\\n<v>\" keyed by the sale's shop.secret>")
}

// signalHash is value's keyed hash for signal dim of event ev: 128 bits
// of HMAC-SHA256 under the sale's signal key, in hex.
func (s *Edge) signalHash(ev, dim, value string) string {
	k := hmac.New(sha256.New, s.signalKey)
	k.Write([]byte("anteroom signals v1\x00" + ev))
	m := hmac.New(sha256.New, k.Sum(nil))
	m.Write([]byte(dim + "\x00" + value))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// signalKeyOf derives the key of signal hashes from the edge secret.
func signalKeyOf(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("anteroom signal key"))
	return m.Sum(nil)
}

// deviceKey is what keys the per-device rate limits of a request for
// user: the keyed hash of the sale's device signal read from its
// configured trusted source, or "" (no device budget counted) when the
// sale has no device signal or the request carries none that can be
// believed (a proxy header from a peer that is no trusted proxy, a token
// without the claim). A bare X-Device-ID is never believed: a client that
// sent a new one per request would get a new budget each time. A signed
// signal that fails its check is 401 bad_signal, a malformed one 400, and
// counts nothing.
func (s *Edge) deviceKey(c *fiber.Ctx, cfg *event.Config, user string) (string, error) {
	const dim = "device"
	src := cfg.Signals.Source(dim)
	if src == nil {
		return "", nil
	}
	header := headerOf(dim, src)
	var v string
	var err error
	switch src.Source {
	case event.SourceProxyHeader:
		if !s.proxies.TrustsPeer(c) {
			return "", nil
		}
		if v, err = oneHeader(c, header); err == nil && v != "" && !callerValuePattern.MatchString(v) {
			err = kit.BadRequest("%s must be 1 to 128 characters of A-Z a-z 0-9 . _ : + / = -", header)
		}
	case event.SourceSignedHeader:
		raw, herr := oneHeader(c, header)
		if herr != nil || raw == "" {
			return "", herr
		}
		v, err = s.signedSignal(c, cfg, user, dim, header)
	case event.SourceJWTClaim:
		claims, cerr := s.tokenClaims(c, cfg, user)
		if cerr != nil {
			return "", cerr
		}
		if vs := claims[src.Claim]; len(vs) == 1 && vs[0] != "" && len(vs[0]) <= 256 {
			v = vs[0]
		}
	}
	if err != nil || v == "" {
		return "", err
	}
	return s.signalHash(cfg.ID, dim, v), nil
}

// HasSignal reports whether the request carries signal name of sale cfg
// for user from the sale's source for it, believed as Signals believes it
// (a trusted proxy's well-formed header, a valid signature of the shop
// for this sale and user, one claim of the identity token naming user).
// A signal without a source, or missing, forged, stale or untrusted, is
// false. It counts nothing: the door rules' signals.<name>.
func (s *Edge) HasSignal(c *fiber.Ctx, cfg *event.Config, user, name string) bool {
	src := cfg.Signals.Source(name)
	if src == nil {
		return false
	}
	var err error
	switch src.Source {
	case event.SourceJWTClaim:
		var claims map[string][]string
		if claims, err = s.tokenClaims(c, cfg, user); err == nil {
			_, err = claimValue(claims, name, src.Claim)
		}
	case event.SourceSignedHeader:
		_, err = s.signedSignal(c, cfg, user, name, headerOf(name, src))
	case event.SourceProxyHeader:
		_, err = s.proxySignal(c, name, headerOf(name, src))
	default:
		return false
	}
	return err == nil
}
