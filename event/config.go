// Package event defines a sale's configuration, validates it, derives its
// public phase from a clock reading, and stores it in Redis.
//
// A Config is a plain value: the store hands out copies, so callers may read
// them from any goroutine. Changes go through Store.Put, which applies them
// with a compare-and-set on a version number, so concurrent admin edits never
// overwrite each other silently. Store.PutBefore also refuses a change once
// a lock instant (LockAt) has passed by Redis TIME, in the same step as the
// save, so no node's clock decides a lock.
package event

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Mode is how the waiting room orders people.
type Mode string

const (
	// FCFS admits in arrival order, except that everyone who arrives
	// within the shuffle window is placed in a random, verifiable order.
	FCFS Mode = "fcfs"
	// Lottery registers everyone until the sale starts, then draws.
	Lottery Mode = "lottery"
	// SafetyNet is a site-wide room that is always on: everyone goes
	// straight through while the active people stay under max_active, and
	// people queue, first come first served, only above it (safetynet.go).
	SafetyNet Mode = "safety_net"
)

// Config is one sale. Times are absolute; durations are in seconds so the JSON
// form is what staff type.
//
// Each field says its default (what Defaults fills into a zero value;
// DefaultConfig is a Config holding every default) and when it locks. A
// field that locks cannot change from that instant on, judged by Redis
// TIME in the same step as the save (Store.PutBefore, 409 locked). The
// locks, from lockRules:
//
//   - the window (mode, random_window_seconds, starts_at): LockMargin
//     (10 s) before starts_at, and a change that would close the window
//     within LockMargin is refused;
//   - the opening (prequeue_opens_at, join_shards, the lanes' names, order
//     and starts): LockMargin before prequeue_opens_at;
//   - the stock (supply, reserve_units, buckets): at starts_at;
//   - every other field never locks: it is hot-updatable, and every node
//     acts on a change within a tick.
type Config struct {
	// ID names the event in its URLs, Redis keys and NATS subjects
	// (ValidID: lowercase letters, digits, '_' and '-', at most 64). It
	// comes from the path of PUT /admin/events/{id} and never changes.
	ID string `json:"id"`
	// Name is what shoppers and staff see, at most 200 bytes. Never locks.
	//
	// Default: ""
	Name string `json:"name"`
	// Supply is the units for sale, 1 to MaxSupply (0 in a safety-net
	// room, which sells nothing). Required. Locks at starts_at; before
	// it, a change is refused while more units are sold (bypass passes,
	// early lanes) than the new supply leaves.
	Supply int64 `json:"supply"`
	// PerUserLimit is how many units one user may hold in claims, 1 to
	// 100. Never locks.
	//
	// Default: 1
	PerUserLimit int64 `json:"per_user_limit"`
	// PrequeueOpensAt is when the queue opens for joining; not after
	// StartsAt. Locks LockMargin before the queue opens (the stored
	// value).
	//
	// Default: StartsAt
	PrequeueOpensAt time.Time `json:"prequeue_opens_at"`
	// StartsAt is when the sale starts: the shuffle window opens (FCFS),
	// registration ends (lottery), or the room is switched on (safety
	// net). Required. Locks with the window, LockMargin before the stored
	// StartsAt; a change that would close the window within LockMargin is
	// refused.
	StartsAt time.Time `json:"starts_at"`
	// EndsAt is when the sale ends; after StartsAt and after the window
	// closes. Never locks.
	//
	// Default: StartsAt + 24 h (a safety-net room: StartsAt + SafetyNetLife)
	EndsAt time.Time `json:"ends_at"`
	// Mode is how people are ordered: FCFS, Lottery or SafetyNet. Locks
	// with the window, LockMargin before StartsAt: a running room cannot
	// become a sale, nor a sale a room.
	//
	// Default: FCFS
	Mode Mode `json:"mode"`
	// RandomWindowSeconds is how long after StartsAt arrivals are still
	// shuffled (FCFS), 0 to 86400; 0 in a safety-net room. Locks with the
	// window, LockMargin before StartsAt.
	//
	// Default: 0 (no shuffle window: arrival order)
	RandomWindowSeconds int64 `json:"random_window_seconds"`
	// AdmitRatePerSecond is how many people are admitted per second over
	// all nodes (lanes take their shares of it), above 0 and at most
	// MaxRate. Never locks.
	//
	// Default: 100
	AdmitRatePerSecond float64 `json:"admit_rate_per_second"`
	// MaxActive caps the people active at once (admitted and within their
	// grace, holding an unused admission, or holding a pending claim);
	// 0 is no cap. Required (at least 1) in a safety-net room. Never
	// locks.
	//
	// Default: 0
	MaxActive int64 `json:"max_active"`
	// NoShowGraceSeconds is how long an admitted person has to fetch
	// their admission token before the frontier moves past them as a
	// no-show, 2 to 600. Never locks.
	//
	// Default: 15
	NoShowGraceSeconds int64 `json:"no_show_grace_seconds"`
	// AdmissionTTLSeconds is how long an admission token lasts, 10 to
	// 3600. Never locks (tokens already issued keep their expiry).
	//
	// Default: 300
	AdmissionTTLSeconds int64 `json:"admission_ttl_seconds"`
	// ClaimTTLSeconds is how long a pending claim holds its unit before
	// it is released, 10 to 604800. Never locks.
	//
	// Default: 900
	ClaimTTLSeconds int64 `json:"claim_ttl_seconds"`
	// Buckets is how many stock buckets (Redis keys, spread over shards)
	// hold the units, 1 to MaxBuckets and at most the units for sale; 1
	// in a safety-net room. Locks at StartsAt; before it, a change is
	// refused once a unit was sold.
	//
	// Default: 1
	Buckets int `json:"buckets"`
	// ReserveUnits are units of Supply kept out of the sale, at least 0
	// and less than Supply. Locks at StartsAt.
	//
	// Default: 0
	ReserveUnits int64 `json:"reserve_units"`
	// Paused stops admission and claims (staff's pause and resume set
	// it). Never locks.
	//
	// Default: false
	Paused bool `json:"paused"`
	// Closed, when set, closes the room (maintenance, or not accepting
	// anyone): joins, claims and the gate are refused with 503 closed,
	// people already queued keep their place and see its message, and
	// admission is held (closure.go). Separate from Paused, which keeps
	// taking joins. Staff's close and reopen set it. Never locks.
	//
	// Default: none (open)
	Closed *Closure `json:"closed,omitempty"`
	// FailOpenUntil, while in the future, makes the gate let everyone
	// through (failopen.go): for a safety-net room or gated pages whose
	// room cannot answer as it should. It ends by itself at the deadline
	// and never applies to claims. Set only with PUT
	// /admin/events/{id}/fail-open (a confirmation, at most 24 h ahead),
	// ended early with DELETE; a PUT of the event keeps it. Never locks.
	//
	// Default: none (the gate checks admissions)
	FailOpenUntil *time.Time `json:"fail_open_until,omitempty"`
	// FrameAncestors are the origins that may show the event's waiting
	// room in a frame (CSP frame-ancestors; embed.go): https://host[:port]
	// or https://*.domain, http only for localhost, 127.0.0.1 and [::1];
	// at most MaxFrameAncestors. Without any, no page may frame it. Never
	// locks.
	//
	// Default: none (frame-ancestors 'none', X-Frame-Options: DENY)
	FrameAncestors []string `json:"frame_ancestors,omitempty"`
	// Limits are the sale's edge protection: rate limits, proof of work,
	// captcha, invite-only, one claim per device or payment (limits.go
	// gives each default; Limits.Defaults fills them). Never locks.
	Limits Limits `json:"limits"`
	// JoinShards is S, how many join shards the queue is spread over, each
	// on its own Redis Cluster slot (see queue.Order), 1 to MaxJoinShards.
	// 1 keeps every key of the queue on the event's one slot. Locks
	// LockMargin before the queue opens (PrequeueOpensAt).
	//
	// Default: 1
	JoinShards int `json:"join_shards"`
	// Webhooks receive the sale's lifecycle events (see webhook.go).
	// Never locks.
	//
	// Default: none
	Webhooks []Webhook `json:"webhooks,omitempty"`
	// PageVersion names the published waiting-room page (Pages, stored
	// apart): the Pages version at which it was published; 0 for the
	// built-in page. Set by publishing, never by a PUT of the event.
	PageVersion int64 `json:"page_version,omitempty"`
	// Lanes give groups of people a share of the admission rate and an
	// earlier start (see lanes.go). Their names, order and starts lock
	// LockMargin before the queue opens; shares and claims never lock.
	//
	// Default: none
	Lanes []Lane `json:"lanes,omitempty"`
	// Shop signs the shop's calls (a finished checkout session, a health
	// signal) and holds admission while the shop's health check fails
	// (see shop.go). With MaxActive it admits by checkout capacity.
	// Never locks.
	//
	// Default: none (no shop secret, no health check)
	Shop Shop `json:"shop"`
	// Signals say where the sale's per-person signals (device, payment,
	// phone, address) are read: a claim of the identity token, a header
	// the shop signs, or a trusted proxy's header (signals.go). Only
	// signals with a source can be limited (limits.signal_claims). Never
	// locks.
	//
	// Default: none (no signal is read)
	Signals Signals `json:"signals,omitzero"`
	// Attestation is the sale's device attestation (Apple App Attest,
	// Google Play Integrity): with require, every join and claim proves
	// it comes from the shop's genuine app on a genuine device
	// (attestation.go). Never locks.
	//
	// Default: none (no attestation required)
	Attestation Attestation `json:"attestation,omitzero"`
	// Door is who may come in: block and eligibility lists and rules
	// (package door). Never locks.
	//
	// Default: none (everyone queues)
	Door Door `json:"door,omitzero"`

	// Version increases with every stored change. Set by the store.
	Version int64 `json:"version"`
	// Seed is the secret that keys the shuffle; never shown before the
	// window closes. Lowercase hex of 32 bytes, drawn when the event is
	// created; never set by staff.
	Seed string `json:"seed,omitempty"`
	// LaneSeeds: each lane draws its window with its own seed derived from
	// Seed (queue.LaneSeed), so an early lane's positions say nothing of
	// the default window's draw while it is open. Set when the event is
	// created (its seed is), never by staff; false for an event created
	// before, whose lanes draw with Seed itself.
	LaneSeeds bool `json:"lane_seeds,omitempty"`
	// SeedCommitment is lowercase hex sha256 of the seed bytes, public from
	// creation on. Set with the seed.
	SeedCommitment string `json:"seed_commitment"`
}

// Limits on configuration values.
const (
	MaxSupply  = 100_000_000
	MaxBuckets = 1024
	// MaxJoinShards bounds JoinShards; a status answer costs O(S).
	MaxJoinShards = 256
	MaxRate       = 1_000_000
	// MaxAdmissionTTLSeconds bounds AdmissionTTLSeconds: no admission
	// token lives longer, which is what a retired signing key waits for
	// (`anteroom keys retire`).
	MaxAdmissionTTLSeconds = 3600
	// MaxShardedSpan bounds how long a queue of join shards (JoinShards >
	// 1) takes joins, from prequeue_opens_at to JoinEnd: a join shard
	// orders its later joiners by their arrival second, which its user
	// entries hold up to 2^22 − 1 (48.5 days; queue.MaxShardedSpan, whose
	// join refuses any later join).
	MaxShardedSpan = (1<<22 - 1) * time.Second
)

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidID reports whether s can name an event. IDs appear in Redis keys and
// NATS subjects, so they are restricted to lowercase letters, digits, '_'
// and '-', at most 64 characters.
// It is checked on every request (the event of the path), so it is
// written out rather than run through idPattern, which it equals.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// ErrInvalid wraps every validation failure.
var ErrInvalid = errors.New("event: invalid configuration")

// DefaultConfig returns a Config holding every default: what Defaults
// fills into a sale that leaves its fields out (and Limits' defaults). It
// has no ID and no times: starts_at is required, and prequeue_opens_at and
// ends_at default to values derived from it. The console shows these
// defaults (GET /admin/defaults) instead of copying them.
func DefaultConfig() Config {
	var c Config
	c.Defaults()
	return c
}

// Defaults fills zero fields with their defaults.
func (c *Config) Defaults() {
	if c.Mode == "" {
		c.Mode = FCFS
	}
	if c.Mode == SafetyNet {
		c.safetyNetDefaults()
	}
	if c.PerUserLimit == 0 {
		c.PerUserLimit = 1
	}
	if c.AdmitRatePerSecond == 0 {
		c.AdmitRatePerSecond = 100
	}
	if c.AdmissionTTLSeconds == 0 {
		c.AdmissionTTLSeconds = 300
	}
	if c.ClaimTTLSeconds == 0 {
		c.ClaimTTLSeconds = 900
	}
	if c.NoShowGraceSeconds == 0 {
		c.NoShowGraceSeconds = 15
	}
	if c.Buckets == 0 {
		c.Buckets = 1
	}
	if c.JoinShards == 0 {
		c.JoinShards = 1
	}
	if c.PrequeueOpensAt.IsZero() {
		c.PrequeueOpensAt = c.StartsAt
	}
	if c.EndsAt.IsZero() && !c.StartsAt.IsZero() {
		c.EndsAt = c.StartsAt.Add(24 * time.Hour)
	}
	if c.Shop.Health != nil {
		c.Shop.Health.defaults()
	}
	c.Limits.Defaults()
}

// Validate checks c and returns an error wrapping ErrInvalid that says which
// field is wrong.
func (c *Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	if c.Mode == SafetyNet {
		if err := c.validateSafetyNet(); err != nil {
			return err
		}
	}
	if err := c.Door.validate(); err != nil {
		return err
	}
	switch {
	case !ValidID(c.ID):
		return bad("id must match %s", idPattern)
	case len(c.Name) > 200:
		return bad("name is longer than 200 bytes")
	case c.Mode != SafetyNet && (c.Supply < 1 || c.Supply > MaxSupply):
		return bad("supply must be between 1 and %d", MaxSupply)
	case c.ReserveUnits < 0 || c.ReserveUnits >= max(c.Supply, 1):
		return bad("reserve_units must be at least 0 and less than supply")
	case c.PerUserLimit < 1 || c.PerUserLimit > 100:
		return bad("per_user_limit must be between 1 and 100")
	case c.StartsAt.IsZero():
		return bad("starts_at is required")
	case c.PrequeueOpensAt.After(c.StartsAt):
		return bad("prequeue_opens_at must not be after starts_at")
	case !c.EndsAt.After(c.StartsAt):
		return bad("ends_at must be after starts_at")
	case c.Mode != FCFS && c.Mode != Lottery && c.Mode != SafetyNet:
		return bad("mode must be %q, %q or %q", FCFS, Lottery, SafetyNet)
	case c.RandomWindowSeconds < 0 || c.RandomWindowSeconds > 86400:
		return bad("random_window_seconds must be between 0 and 86400")
	case c.Mode == FCFS && c.StartsAt.Add(time.Duration(c.RandomWindowSeconds)*time.Second).After(c.EndsAt):
		return bad("the shuffle window must close before ends_at")
	case !(c.AdmitRatePerSecond > 0) || c.AdmitRatePerSecond > MaxRate:
		return bad("admit_rate_per_second must be above 0 and at most %d", MaxRate)
	case c.MaxActive < 0:
		return bad("max_active must not be negative")
	case c.NoShowGraceSeconds < 2 || c.NoShowGraceSeconds > 600:
		return bad("no_show_grace_seconds must be between 2 and 600")
	case c.AdmissionTTLSeconds < 10 || c.AdmissionTTLSeconds > MaxAdmissionTTLSeconds:
		return bad("admission_ttl_seconds must be between 10 and %d", MaxAdmissionTTLSeconds)
	case c.ClaimTTLSeconds < 10 || c.ClaimTTLSeconds > 7*86400:
		return bad("claim_ttl_seconds must be between 10 and 604800")
	case c.Buckets < 1 || c.Buckets > MaxBuckets:
		return bad("buckets must be between 1 and %d", MaxBuckets)
	case c.Mode != SafetyNet && int64(c.Buckets) > c.Supply-c.ReserveUnits:
		return bad("buckets must not exceed the units for sale")
	case c.JoinShards < 1 || c.JoinShards > MaxJoinShards:
		return bad("join_shards must be between 1 and %d", MaxJoinShards)
	case c.JoinShards > 1 && c.JoinEnd().Sub(c.PrequeueOpensAt) > MaxShardedSpan:
		return bad("with join_shards above 1, joining (prequeue_opens_at to ends_at) must last at most %d seconds", int64(MaxShardedSpan/time.Second))
	}
	if err := c.validateWebhooks(); err != nil {
		return err
	}
	if err := c.validateFrameAncestors(); err != nil {
		return err
	}
	if err := c.validateClosure(); err != nil {
		return err
	}
	if err := c.validateFailOpen(); err != nil {
		return err
	}
	if err := c.validateLanes(); err != nil {
		return err
	}
	if err := c.validateShop(); err != nil {
		return err
	}
	if err := c.Limits.Validate(); err != nil {
		return err
	}
	if err := c.validateSignals(); err != nil {
		return err
	}
	return c.validateAttestation()
}

// WindowEnd is when the shuffle window (FCFS) or the registration (lottery)
// closes: the window size is frozen then and admission starts.
func (c *Config) WindowEnd() time.Time {
	if c.Mode == Lottery {
		return c.StartsAt
	}
	return c.StartsAt.Add(time.Duration(c.RandomWindowSeconds) * time.Second)
}

// JoinEnd is when joining stops: ends_at for FCFS, starts_at for a lottery.
func (c *Config) JoinEnd() time.Time {
	if c.Mode == Lottery {
		return c.StartsAt
	}
	return c.EndsAt
}

// OnSale is the number of units the claim step may grant.
func (c *Config) OnSale() int64 { return c.Supply - c.ReserveUnits }
