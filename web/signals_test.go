package web

import (
	"context"
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
// who reach the node directly), admission tokens whose raw value is
// their user, reservations kept in a map, and a claim store that grants.
type (
	anyPeerIdentity struct{}
	rawAdmitter     struct{ admitter }
	grantClaims     struct{ claimer }
	mapReserver     struct {
		mu    sync.Mutex
		calls int
		held  map[string]string // kind/value -> user
	}
)

func (anyPeerIdentity) User(c *fiber.Ctx, _ bool) (string, error) {
	return strings.Clone(c.Get("X-User-ID")), nil
}
func (rawAdmitter) Verify(raw, ev string, _ time.Time) (tokens.Admission, error) {
	return tokens.Admission{Event: ev, User: raw, Pos: 1, ID: "jti-" + raw}, nil
}
func (grantClaims) Claim(_ context.Context, r claim.Request) (claim.Result, error) {
	return claim.Result{ClaimID: "c-" + r.User, Status: "pending"}, nil
}
func (m *mapReserver) Reserve(_ context.Context, kind, _, value, user string, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.held == nil {
		m.held = map[string]string{}
	}
	k := kind + "/" + value
	if u, ok := m.held[k]; ok && u != user {
		return limit.ErrTaken
	}
	m.held[k] = user
	return nil
}

// TestDeviceSignalsOnlyFromTrustedProxies: X-Device-ID and
// X-Payment-Fingerprint are believed only from a trusted proxy. From any
// other peer they key no rate limit (a new value per request used to give
// a new device bucket each time) and a sale with one claim per device or
// payment refuses the claim 403 untrusted_signal without a reservation
// (a refused user used to get 201 by sending a new device id). From a
// trusted proxy the headers are honoured as before.
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
			res := &mapReserver{}
			l := event.Limits{OneClaimPerDevice: true, OneClaimPerPayment: true}
			l.Join.Device = event.Rate{PerSecond: 1, Burst: 1}
			l.Claim.Device = event.Rate{PerSecond: 1, Burst: 1}
			app := limApp(t, Config{TrustedProxies: tc.trusted}, limSale(l), Deps{
				Identity: anyPeerIdentity{}, Admitter: rawAdmitter{}, Claims: grantClaims{},
				Limiter: rec, Reservations: res,
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
			if trusted && strings.Join(devices, ",") != "d-1,d-2,d-3" {
				t.Errorf("a trusted proxy's device ids keyed %v, want d-1,d-2,d-3", devices)
			}

			claimAs := func(user, device, card string) limAnswer {
				return limDo(t, app, "POST", "/events/ev/claim", map[string]string{"Authorization": "Bearer " + user, "X-User-ID": user,
					protect.DeviceHeader: device, protect.PaymentHeader: card}, nil)
			}
			steps := []struct {
				user, device, card string
				status             int
				code               string
			}{
				{"alice", "phone-A", "fp-1", 201, ""},
				{"bob", "phone-A", "fp-2", 409, "limit_reached"},
				{"bob", "phone-B", "fp-1", 409, "limit_reached"},
				{"bob", "phone-B", "fp-2", 201, ""},
			}
			for i, s := range steps {
				a := claimAs(s.user, s.device, s.card)
				if !trusted {
					s.status, s.code = 403, "untrusted_signal"
				}
				if a.status != s.status || a.code() != s.code {
					t.Fatalf("step %d: %s claims with %s %s: %d %v, want %d %s", i, s.user, s.device, s.card, a.status, a.body, s.status, s.code)
				}
			}
			if !trusted && res.calls != 0 {
				t.Fatalf("an untrusted peer's device and card made %d reservations", res.calls)
			}
		})
	}
}
