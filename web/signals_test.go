package web

import (
	"context"
	"fmt"
	"github.com/anteroom/anteroom/retention"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web/protect"
	"github.com/gofiber/fiber/v2"
)

// Fakes of the signal tests: an identity that names the caller by
// X-User-ID from any peer (as the jwt and anonymous modes name callers
// who reach the node directly), one that also reads token claims from
// X-Test-Claim (as the jwt mode reads a verified token's), admission
// tokens whose raw value is their user, and a claim store that grants
// and records each request.
type (
	anyPeerIdentity struct{}
	claimsIdentity  struct{ anyPeerIdentity }
	rawAdmitter     struct{ admitter }
	recClaims       struct {
		claimer
		mu   sync.Mutex
		reqs []claim.Request
	}
)

func (anyPeerIdentity) User(c *fiber.Ctx, _ bool) (string, error) {
	return strings.Clone(c.Get("X-User-ID")), nil
}
func (claimsIdentity) UserClaims(c *fiber.Ctx, names []string) (string, map[string][]string, error) {
	vals := map[string][]string{}
	if v := c.Get("X-Test-Claim"); v != "" {
		for _, n := range names {
			vals[n] = []string{strings.Clone(v)}
		}
	}
	return strings.Clone(c.Get("X-User-ID")), vals, nil
}
func (rawAdmitter) Verify(raw, ev string, _ time.Time) (tokens.Admission, error) {
	return tokens.Admission{Event: ev, User: raw, Pos: 1, ID: "jti-" + raw}, nil
}
func (r *recClaims) Claim(_ context.Context, q claim.Request) (claim.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, q)
	return claim.Result{ClaimID: "c-" + q.User, Status: "pending"}, nil
}

// taken returns the requests since the last call with their limited
// signals only (the sweep's, claim.NoLimit, are TestSweepSignals').
func (r *recClaims) taken() []claim.Request {
	out := r.takenAll()
	for i := range out {
		out[i].Signals = slices.DeleteFunc(out[i].Signals, func(s claim.Signal) bool { return s.Max == claim.NoLimit })
	}
	return out
}

// takenAll returns the requests since the last call as they came.
func (r *recClaims) takenAll() []claim.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reqs
	r.reqs = nil
	return out
}

// signalSale is sale "ev" with the signals srcs and the signal limits lim.
func signalSale(srcs event.Signals, lim event.SignalLimits) *event.Config {
	cfg := limSale(event.Limits{SignalClaims: lim}).Config
	cfg.Signals = srcs
	cfg.Shop.Secret = shopSecret
	return &cfg
}

const shopSecret = "the-shop-secret-of-this-sale-0123"

var hashPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestDeviceSignalsOnlyFromTrustedProxies: X-Device-ID keys the device
// rate limits only from a trusted proxy, as its keyed hash (a new value
// per request used to give a new device bucket each time). A sale that reads its device and
// payment signals from proxy headers refuses a claim from any other peer
// 403 untrusted_signal without calling the claim store; from a trusted
// proxy the claim carries each signal as its keyed hash (never the
// value): the same value the same hash, another value another.
func TestDeviceSignalsOnlyFromTrustedProxies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trusted []string
	}{{"untrusted peer", nil}, {"trusted proxy", []string{"0.0.0.0"}}} {
		t.Run(tc.name, func(t *testing.T) {
			trusted := tc.trusted != nil
			var mu sync.Mutex
			var devices []string
			rec := limLimiter{allow: func(rules []limit.Rule) limit.Decision {
				mu.Lock()
				defer mu.Unlock()
				for _, r := range rules {
					if r.Dim == limit.Device {
						devices = append(devices, strings.Clone(r.Value))
					}
				}
				return limit.Decision{Allowed: true}
			}}
			cfg := signalSale(event.Signals{
				Device:  &event.SignalSource{Source: event.SourceProxyHeader},
				Payment: &event.SignalSource{Source: event.SourceProxyHeader},
			}, event.SignalLimits{Device: 1, Payment: 1})
			cfg.Limits.Join.Device = event.Rate{PerSecond: 1, Burst: 1}
			cfg.Limits.Claim.Device = event.Rate{PerSecond: 1, Burst: 1}
			claims := &recClaims{}
			app := limApp(t, Config{TrustedProxies: tc.trusted}, limSaleOf(cfg), Deps{
				Identity: anyPeerIdentity{}, Admitter: rawAdmitter{}, Claims: claims, Limiter: rec,
			})
			for _, d := range []string{"d-1", "d-2", "d-3"} {
				a := limDo(t, app, "POST", "/events/ev/join", map[string]string{"X-User-ID": "alice", protect.DeviceHeader: d}, nil)
				if a.status != 200 {
					t.Fatalf("join with device %s: %d %v", d, a.status, a.body)
				}
			}
			if !trusted && len(devices) != 0 {
				t.Errorf("an untrusted peer's device ids keyed the limits: %v", devices)
			}
			if trusted && (len(devices) != 3 || devices[0] == devices[1] || devices[1] == devices[2] || !hashPattern.MatchString(devices[0]) || strings.Contains(strings.Join(devices, ","), "d-")) {
				t.Errorf("a trusted proxy's device ids keyed %v, want three keyed hashes, never the ids", devices)
			}

			claimAs := func(user, device, card string) limAnswer {
				return limDo(t, app, "POST", "/events/ev/claim", map[string]string{"Authorization": "Bearer " + user, "X-User-ID": user,
					protect.DeviceHeader: device, protect.PaymentHeader: card}, nil)
			}
			hashes := map[string]string{} // dim/value -> hash
			for i, s := range []struct{ user, device, card string }{{"alice", "phone-A", "fp-1"}, {"bob", "phone-A", "fp-2"}, {"carol", "phone-B", "fp-1"}} {
				a := claimAs(s.user, s.device, s.card)
				got := claims.taken()
				if !trusted {
					if a.status != 403 || a.code() != "untrusted_signal" || len(got) != 0 {
						t.Fatalf("step %d from an untrusted peer: %d %v and %d claims, want 403 untrusted_signal and none", i, a.status, a.body, len(got))
					}
					continue
				}
				if a.status != 201 || len(got) != 1 || len(got[0].Signals) != 2 {
					t.Fatalf("step %d: %d %v, claims %+v; want 201 with two signals", i, a.status, a.body, got)
				}
				for _, sg := range got[0].Signals {
					v := map[string]string{claim.SignalDevice: s.device, claim.SignalPayment: s.card}[sg.Dim]
					if !hashPattern.MatchString(sg.Hash) || strings.Contains(sg.Hash, v) || sg.Max != 1 {
						t.Fatalf("step %d: signal %+v, want a 128-bit hex hash with max 1", i, sg)
					}
					if h, ok := hashes[sg.Dim+"/"+v]; ok && h != sg.Hash {
						t.Fatalf("step %d: %s %s hashed %s, earlier %s", i, sg.Dim, v, sg.Hash, h)
					}
					hashes[sg.Dim+"/"+v] = sg.Hash
				}
				if !got[0].SignalsUntil.Equal(retention.Until(cfg.EndsAt, retention.DefaultPeriod)) {
					t.Fatalf("step %d: the signals expire at %v, want the retention period after the sale", i, got[0].SignalsUntil)
				}
			}
			if trusted && (hashes["device/phone-A"] == hashes["device/phone-B"] || hashes["payment/fp-1"] == hashes["payment/fp-2"]) {
				t.Fatalf("different values share a hash: %v", hashes)
			}
		})
	}
}

// TestSignedSignals: a signal the shop signs passes only with its
// signature for this sale, this user, this signal and this value, within
// five minutes of the node's clock; anything else is 401 bad_signal (a
// missing header 400, a doubled one 400), and a refused signal reaches
// neither the rate limits nor the claim store: it counts nothing.
func TestSignedSignals(t *testing.T) {
	cfg := signalSale(event.Signals{Payment: &event.SignalSource{Source: event.SourceSignedHeader, Header: "X-Card"}}, event.SignalLimits{Payment: 2})
	var limited int
	var mu sync.Mutex
	claims := &recClaims{}
	app := limApp(t, Config{}, limSaleOf(cfg), Deps{
		Identity: anyPeerIdentity{}, Admitter: rawAdmitter{}, Claims: claims,
		Limiter: limLimiter{allow: func([]limit.Rule) limit.Decision {
			mu.Lock()
			defer mu.Unlock()
			limited++
			return limit.Decision{Allowed: true}
		}},
	})
	now := time.Now()
	sign := func(secret string, at time.Time, ev, user, dim, v string) string {
		return protect.SignSignal(secret, at, ev, user, dim, v)
	}
	good := sign(shopSecret, now, "ev", "alice", "payment", "fp-1")
	cases := []struct {
		name   string
		header string
		status int
		code   string
	}{
		{"signed", good, 201, ""},
		{"signed a minute ago", sign(shopSecret, now.Add(-time.Minute), "ev", "alice", "payment", "fp-1"), 201, ""},
		{"missing", "", 400, "bad_request"},
		{"a bare value", "fp-1", 401, "bad_signal"},
		{"another event", sign(shopSecret, now, "ev2", "alice", "payment", "fp-1"), 401, "bad_signal"},
		{"another user", sign(shopSecret, now, "ev", "bob", "payment", "fp-1"), 401, "bad_signal"},
		{"another signal", sign(shopSecret, now, "ev", "alice", "device", "fp-1"), 401, "bad_signal"},
		{"stale", sign(shopSecret, now.Add(-6*time.Minute), "ev", "alice", "payment", "fp-1"), 401, "bad_signal"},
		{"from the future", sign(shopSecret, now.Add(6*time.Minute), "ev", "alice", "payment", "fp-1"), 401, "bad_signal"},
		{"another secret", sign("another-shop-secret-0123456789", now, "ev", "alice", "payment", "fp-1"), 401, "bad_signal"},
		{"value swapped", strings.Replace(good, "value=fp-1", "value=fp-2", 1), 401, "bad_signal"},
		{"value appended", good + ",value=fp-2", 401, "bad_signal"},
		{"no signature", "value=fp-1,t=" + fmt.Sprint(now.Unix()), 401, "bad_signal"},
		{"a bad value", sign(shopSecret, now, "ev", "alice", "payment", "fp 1"), 401, "bad_signal"},
	}
	for _, tc := range cases {
		hdr := map[string]string{"Authorization": "Bearer alice", "X-User-ID": "alice"}
		if tc.header != "" {
			hdr["X-Card"] = tc.header
		}
		mu.Lock()
		limited = 0
		mu.Unlock()
		a := limDo(t, app, "POST", "/events/ev/claim", hdr, nil)
		got := claims.taken()
		if a.status != tc.status || a.code() != tc.code {
			t.Fatalf("%s: %d %v, want %d %s", tc.name, a.status, a.body, tc.status, tc.code)
		}
		mu.Lock()
		spent := limited
		mu.Unlock()
		if tc.status != 201 && (len(got) != 0 || spent != 0) {
			t.Fatalf("%s: refused, yet %d claims and %d limiter calls", tc.name, len(got), spent)
		}
		if tc.status == 201 && (len(got) != 1 || len(got[0].Signals) != 1 || got[0].Signals[0].Dim != "payment" || got[0].Signals[0].Max != 2) {
			t.Fatalf("%s: claims %+v, want one with the payment signal, max 2", tc.name, got)
		}
	}
	twice := newLimRequest("POST", "/events/ev/claim", map[string]string{"Authorization": "Bearer alice", "X-User-ID": "alice"})
	twice.Header.Add("X-Card", good)
	twice.Header.Add("X-Card", good)
	if a := limDoRequest(t, app, twice); a.status != 400 || len(claims.taken()) != 0 {
		t.Fatalf("a signed header sent twice: %d %v, want 400 and no claim", a.status, a.body)
	}
}

// TestTokenClaimSignals: a signal read from the identity token's claim is
// hashed like any other; a token without the claim is 400, and a node
// whose identity mode reads no token claims refuses 403 untrusted_signal.
func TestTokenClaimSignals(t *testing.T) {
	cfg := signalSale(event.Signals{Phone: &event.SignalSource{Source: event.SourceJWTClaim, Claim: "phone_hash"}}, event.SignalLimits{Phone: 1})
	claims := &recClaims{}
	app := limApp(t, Config{}, limSaleOf(cfg), Deps{Identity: claimsIdentity{}, Admitter: rawAdmitter{}, Claims: claims})
	hdr := map[string]string{"Authorization": "Bearer alice", "X-User-ID": "alice", "X-Test-Claim": "ph-1"}
	if a := limDo(t, app, "POST", "/events/ev/claim", hdr, nil); a.status != 201 {
		t.Fatalf("with the claim: %d %v", a.status, a.body)
	}
	if got := claims.taken(); len(got) != 1 || len(got[0].Signals) != 1 || got[0].Signals[0].Dim != "phone" || !hashPattern.MatchString(got[0].Signals[0].Hash) {
		t.Fatalf("claims %+v, want one with the phone's hash", got)
	}
	delete(hdr, "X-Test-Claim")
	if a := limDo(t, app, "POST", "/events/ev/claim", hdr, nil); a.status != 400 || len(claims.taken()) != 0 {
		t.Fatalf("without the claim: %d %v, want 400 and no claim", a.status, a.body)
	}
	plain := limApp(t, Config{}, limSaleOf(cfg), Deps{Identity: anyPeerIdentity{}, Admitter: rawAdmitter{}, Claims: claims})
	hdr["X-Test-Claim"] = "ph-1"
	if a := limDo(t, plain, "POST", "/events/ev/claim", hdr, nil); a.status != 403 || a.code() != "untrusted_signal" || len(claims.taken()) != 0 {
		t.Fatalf("a node without token claims: %d %v, want 403 untrusted_signal and no claim", a.status, a.body)
	}
}

// TestSweepSignals: beside its limits, a claim records for the sweep,
// limiting nothing, the keyed hash of the caller's network (the /24 of an
// IPv4 address, the /64 of an IPv6 one, from the address the trusted
// proxies name), of a signal with a source and no limit, and of the
// identity token's claims the sale names; never a raw value. A missing
// unlimited signal is not recorded and refuses nothing.
func TestSweepSignals(t *testing.T) {
	cfg := signalSale(event.Signals{
		Device:      &event.SignalSource{Source: event.SourceProxyHeader},
		Phone:       &event.SignalSource{Source: event.SourceJWTClaim, Claim: "phone_hash"},
		SweepClaims: []string{"loyalty_id"},
	}, event.SignalLimits{Phone: 1})
	claims := &recClaims{}
	app := limApp(t, Config{TrustedProxies: []string{"0.0.0.0"}}, limSaleOf(cfg), Deps{Identity: claimsIdentity{}, Admitter: rawAdmitter{}, Claims: claims})
	sweepOf := func(ip, device string) map[string]string {
		t.Helper()
		hdr := map[string]string{"Authorization": "Bearer alice", "X-User-ID": "alice", "X-Test-Claim": "v-1", "X-Forwarded-For": ip}
		if device != "" {
			hdr[protect.DeviceHeader] = device
		}
		if a := limDo(t, app, "POST", "/events/ev/claim", hdr, nil); a.status != 201 {
			t.Fatalf("claim from %s: %d %v", ip, a.status, a.body)
		}
		got := claims.takenAll()
		if len(got) != 1 {
			t.Fatalf("claims %+v, want one", got)
		}
		out := map[string]string{}
		for _, sg := range got[0].Signals {
			if !hashPattern.MatchString(sg.Hash) || strings.Contains(sg.Hash, ip) {
				t.Errorf("signal %s: %q is not a keyed hash", sg.Dim, sg.Hash)
			}
			if (sg.Dim == "phone") != (sg.Max == 1) || (sg.Dim != "phone" && sg.Max != claim.NoLimit) {
				t.Errorf("signal %s limits %d", sg.Dim, sg.Max)
			}
			out[sg.Dim] = sg.Hash
		}
		return out
	}
	a := sweepOf("203.0.113.7", "dev-1")
	if len(a) != 4 || a["network"] == "" || a["device"] == "" || a["token:loyalty_id"] == "" || a["phone"] == "" {
		t.Fatalf("signals %v, want phone, device, network and token:loyalty_id", a)
	}
	if b := sweepOf("203.0.113.200", "dev-1"); b["network"] != a["network"] || b["device"] != a["device"] {
		t.Errorf("the same /24 and device: %v, want the same hashes as %v", b, a)
	}
	if c := sweepOf("203.0.114.7", ""); c["network"] == a["network"] || c["device"] != "" || len(c) != 3 {
		t.Errorf("another /24 without a device: %v", c)
	}
	v6a, v6b := sweepOf("2001:db8:1:2::1", "dev-1"), sweepOf("2001:db8:1:2:ffff::9", "dev-1")
	if v6a["network"] != v6b["network"] || v6a["network"] == sweepOf("2001:db8:1:3::1", "dev-1")["network"] {
		t.Errorf("IPv6 networks are not grouped by /64: %v %v", v6a, v6b)
	}
}
