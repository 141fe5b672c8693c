package event

import (
	"fmt"
	"math"
)

// Limits are an event's edge protection: token-bucket rate limits for
// join, claim and status, and the optional abuse defences. Every field may
// change while the sale runs (PUT /admin/events/{id}); nodes apply a change
// within a tick.
//
// In a Rate, per_second 0 takes the default listed on the field and any
// negative value turns the limit off (stored as -1). Two defaults depend on
// how the node names callers (see friction.go): where visitors are
// anonymous, a new identity costs one cookie-less request, so join gets a
// per-IP budget and a lottery a proof of work unless staff turn them off.
// Elsewhere limits per IP are off by default: behind carrier-grade NAT
// many honest shoppers share one address, and behind a gateway every
// caller has the gateway's.
type Limits struct {
	// Join limits POST /events/{id}/join.
	//
	// Default: event off, ip DefaultJoinIP where visitors are anonymous
	// and off elsewhere (stored as per_second 0 until staff choose),
	// device 1/s burst 5, user off (join is idempotent per user, and
	// keeping join at one Redis round trip matters more; turn it on for
	// events that need it)
	Join Budget `json:"join"`
	// BusyNetwork is the per-IP ceiling of the joins a door rule lets
	// past join.ip after a solved challenge (busy_network(), for an
	// address that is many people: a carrier NAT). It is a bucket of its
	// own, spent only by those joins, each after a challenge solved for
	// it (a captcha token, or a proof of work that is good for one join),
	// and the event and global budgets still apply: one address joins at
	// most join.ip's budget plus this one. per_second -1 (no ceiling) is
	// refused.
	//
	// Default: ten times join.ip in force, rate and burst (1/s burst 100
	// for DefaultJoinIP)
	BusyNetwork Rate `json:"busy_network"`
	// Claim limits POST /events/{id}/claim.
	//
	// Default: event off, ip off, device 2/s burst 10, user off (only
	// admitted token holders reach a claim, and a repeated claim is one
	// idempotent script — as cheap as the limiter call that would refuse it,
	// so a per-user budget would double honest claims' Redis work for
	// nothing; turn it on where it helps)
	Claim Budget `json:"claim"`
	// Status limits GET /events/{id}/status on each node separately,
	// without Redis.
	//
	// Default: ip off, ticket 10/s burst 100
	Status StatusBudget `json:"status"`
	// PoW asks joiners for a proof of work.
	PoW PoW `json:"pow"`
	// Captcha asks joiners to pass a hosted captcha (captcha.go).
	//
	// Default: off
	Captcha Captcha `json:"captcha"`
	// InviteOnly admits to join only callers with a signed invite for
	// this event and their user id (anteroom invite).
	InviteOnly bool `json:"invite_only"`
	// SignalClaims are the claims allowed at once per device, payment,
	// phone and address value (signals.go), counted atomically with the
	// claim; 0 is no limit. Each limited signal needs a trusted source
	// (Config.Signals), else the save is refused 400 naming it.
	//
	// Default: no limits
	SignalClaims SignalLimits `json:"signal_claims,omitzero"`
	// OneClaimPerDevice is signal_claims.device 1 (kept for existing
	// configurations; the device signal needs a source).
	OneClaimPerDevice bool `json:"one_claim_per_device"`
	// OneClaimPerPayment is signal_claims.payment 1, as OneClaimPerDevice.
	OneClaimPerPayment bool `json:"one_claim_per_payment"`
}

// Budget is one endpoint's limits per dimension. Event is shared by every
// node (through Redis); IP, Device and User count one caller each.
type Budget struct {
	Event  Rate `json:"event"`
	IP     Rate `json:"ip"`
	Device Rate `json:"device"`
	User   Rate `json:"user"`
}

// StatusBudget is the node-local limits of status polls.
type StatusBudget struct {
	IP     Rate `json:"ip"`
	Ticket Rate `json:"ticket"`
}

// Rate is a token bucket: PerSecond requests per second sustained, Burst
// at once. Burst 0 takes max(1, PerSecond).
type Rate struct {
	PerSecond float64 `json:"per_second"`
	Burst     float64 `json:"burst"`
}

// Off is a Rate that limits nothing.
var Off = Rate{PerSecond: -1}

// On reports whether r limits anything.
func (r Rate) On() bool { return r.PerSecond > 0 }

// PoW configures the proof-of-work challenge of join.
type PoW struct {
	// Enabled requires a solved challenge (X-PoW) on join when true and
	// never when false.
	//
	// Default (null or absent): required for lotteries where visitors are
	// anonymous (Config.PoWRequired)
	Enabled Switch `json:"enabled"`
	// Bits is the difficulty: leading zero bits of sha256(challenge ||
	// nonce). Each bit doubles the work (2^bits hashes on average); the
	// page's crypto.subtle solver hashes about 30,000 a second on a phone,
	// so 15 takes about a second there, and 20 half a minute.
	//
	// Default: 15
	Bits int `json:"bits"`
	// TTLSeconds is how long a challenge may be used.
	//
	// Default: 300
	TTLSeconds int64 `json:"ttl_seconds"`
}

// Bounds of the limits.
const (
	MaxBurst   = 10_000_000
	MaxPoWBits = 26
)

// Defaults fills zero fields with their defaults and writes every
// negative rate as Off. It is idempotent.
func (l *Limits) Defaults() {
	// join.ip 0 stays 0: its default depends on the node (JoinIPRate).
	l.Join.defaults(Budget{Event: Off, IP: Rate{}, Device: Rate{1, 5}, User: Off})
	l.Claim.defaults(Budget{Event: Off, IP: Off, Device: Rate{2, 10}, User: Off})
	l.BusyNetwork.defaults(Rate{}) // 0 stays 0: ten times join.ip in force (BusyNetworkRate)
	l.Status.IP.defaults(Off)
	l.Status.Ticket.defaults(Rate{10, 100})
	if l.PoW.Bits == 0 {
		l.PoW.Bits = 15
	}
	if l.PoW.TTLSeconds == 0 {
		l.PoW.TTLSeconds = 300
	}
	l.Captcha.defaults()
	if l.OneClaimPerDevice && l.SignalClaims.Device == 0 {
		l.SignalClaims.Device = 1
	}
	if l.OneClaimPerPayment && l.SignalClaims.Payment == 0 {
		l.SignalClaims.Payment = 1
	}
}

func (b *Budget) defaults(d Budget) {
	b.Event.defaults(d.Event)
	b.IP.defaults(d.IP)
	b.Device.defaults(d.Device)
	b.User.defaults(d.User)
}

func (r *Rate) defaults(d Rate) {
	switch {
	case r.PerSecond < 0:
		*r = Off
	case r.PerSecond == 0:
		*r = d // Rate{} for a default the node decides
	case r.Burst == 0:
		r.Burst = max(1, math.Ceil(r.PerSecond))
	}
}

// Validate checks l (after Defaults) and returns an error wrapping
// ErrInvalid that names the field.
func (l *Limits) Validate() error {
	rates := []struct {
		name string
		r    Rate
	}{
		{"join.event", l.Join.Event}, {"join.ip", l.Join.IP}, {"join.device", l.Join.Device}, {"join.user", l.Join.User},
		{"claim.event", l.Claim.Event}, {"claim.ip", l.Claim.IP}, {"claim.device", l.Claim.Device}, {"claim.user", l.Claim.User},
		{"status.ip", l.Status.IP}, {"status.ticket", l.Status.Ticket},
	}
	if l.BusyNetwork == Off {
		return fmt.Errorf("%w: limits.busy_network: per_second must be above 0, or 0 for the default (ten times join.ip): a busy network is never unlimited", ErrInvalid)
	}
	rates = append(rates, struct {
		name string
		r    Rate
	}{"busy_network", l.BusyNetwork})
	for _, f := range rates {
		if (f.name == "join.ip" || f.name == "busy_network") && f.r == (Rate{}) {
			continue // the node's default
		}
		if err := f.r.validate(); err != "" {
			return fmt.Errorf("%w: limits.%s: %s", ErrInvalid, f.name, err)
		}
	}
	switch {
	case l.PoW.Bits < 1 || l.PoW.Bits > MaxPoWBits:
		return fmt.Errorf("%w: limits.pow.bits must be between 1 and %d", ErrInvalid, MaxPoWBits)
	case l.PoW.TTLSeconds < 10 || l.PoW.TTLSeconds > 3600:
		return fmt.Errorf("%w: limits.pow.ttl_seconds must be between 10 and 3600", ErrInvalid)
	}
	return l.Captcha.validate()
}

func (r Rate) validate() string {
	switch {
	case math.IsNaN(r.PerSecond) || math.IsInf(r.PerSecond, 0) || math.IsNaN(r.Burst) || math.IsInf(r.Burst, 0):
		return "must be a finite number"
	case r.PerSecond == -1 && r.Burst == 0:
		return ""
	case !(r.PerSecond > 0) || r.PerSecond > MaxRate:
		return fmt.Sprintf("per_second must be above 0 and at most %d, or -1 for off", MaxRate)
	case r.Burst < 1 || r.Burst > MaxBurst:
		return fmt.Sprintf("burst must be between 1 and %d", MaxBurst)
	}
	return ""
}
