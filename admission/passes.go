package admission

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/luascript"
)

// Bypass passes skip the queue: staff mint them for themselves and for
// testing (tokens.Passes signs them), each for one event, until an expiry,
// for a number of uses or unlimited. The signature proves the event, the
// expiry and the uses; Passes keeps what changes in Redis: how often each
// pass was redeemed, whether it was revoked, and the event's counters.
// A redeemed pass buys an admission token and nothing more: the claim step
// still holds the per-user limit and the stock.
//
// Keys, all on the event's hash tag:
//
//	ar:{ev}:pass:<id>  hash: id, exp, uses, used, by, at, note, revoked, revoked_by
//	ar:{ev}:pass:<id>:users  set of the users who redeemed it (a use is one person)
//	ar:{ev}:passes     set of the event's pass ids
//	ar:{ev}:passcount  hash: minted, redeemed, revoked, refused
//
// The counters (PassCountsKey, read with Counts) are the event's record of
// passes for the post-sale report: minted and revoked by staff, redeemed
// (each use), and refused (a genuine pass presented revoked, used up or
// expired; forged passes are refused without Redis and not counted).

//go:embed passmint.lua
var passMintLua string

//go:embed passredeem.lua
var passRedeemLua string

//go:embed passrevoke.lua
var passRevokeLua string

// Pass outcomes callers branch on.
var (
	ErrPassUnknown = errors.New("admission: no such pass")
	ErrPassRevoked = errors.New("admission: pass revoked")
	ErrPassUsedUp  = errors.New("admission: pass used up")
	ErrPassExists  = errors.New("admission: pass id taken")
)

// PassRecord is what staff see of a pass; it never holds the pass itself.
type PassRecord struct {
	ID        string     `json:"id"`
	ExpiresAt time.Time  `json:"expires_at"`
	Uses      int        `json:"uses"` // 0: unlimited until it expires
	Used      int        `json:"used"`
	MintedBy  string     `json:"minted_by"`
	MintedAt  time.Time  `json:"minted_at"`
	Note      string     `json:"note,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	RevokedBy string     `json:"revoked_by,omitempty"`
}

// PassCounts are an event's pass counters.
type PassCounts struct {
	Minted   int64 `json:"minted"`
	Redeemed int64 `json:"redeemed"`
	Revoked  int64 `json:"revoked"`
	Refused  int64 `json:"refused"`
}

// passStore is what Passes needs from a Redis client.
type passStore interface {
	redis.Scripter
	HGetAll(ctx context.Context, key string) *redis.MapStringStringCmd
	SMembers(ctx context.Context, key string) *redis.StringSliceCmd
}

// Passes keeps bypass passes' uses, revocations and counters in Redis. It
// is safe for concurrent use.
type Passes struct {
	rdb                  passStore
	mint, redeem, revoke *redis.Script
}

// NewPasses returns Passes on rdb (*redis.Client or *redis.ClusterClient).
func NewPasses(rdb passStore) *Passes {
	return &Passes{rdb: rdb, mint: luascript.New(passMintLua), redeem: luascript.New(passRedeemLua), revoke: luascript.New(passRevokeLua)}
}

func passKey(ev, id string) string { return "ar:{" + ev + "}:pass:" + id }
func passSetKey(ev string) string  { return "ar:{" + ev + "}:passes" }

// redeemKeys are passredeem.lua's keys for pass id of event ev.
func (p *Passes) redeemKeys(ev, id string) []string {
	return []string{passKey(ev, id), PassCountsKey(ev), passKey(ev, id) + ":users"}
}

// PassCountsKey names the Redis hash of event ev's pass counters (fields
// minted, redeemed, revoked, refused; integers; absent means 0).
func PassCountsKey(ev string) string { return "ar:{" + ev + "}:passcount" }

// Mint records a new pass of event ev. ErrPassExists when its id is taken.
func (p *Passes) Mint(ctx context.Context, ev string, r PassRecord) error {
	n, err := p.mint.Run(ctx, p.rdb, []string{passKey(ev, r.ID), passSetKey(ev), PassCountsKey(ev)},
		r.ID, r.ExpiresAt.Unix(), r.Uses, r.MintedBy, r.MintedAt.Unix(), r.Note).Int()
	if err != nil {
		return fmt.Errorf("pass mint %s: %w", ev, err)
	}
	if n == 0 {
		return ErrPassExists
	}
	return nil
}

// Redeem spends one use of pass id of event ev for user and returns how
// many uses it has had. A use is one person: redeeming again as a user who
// redeemed it before (a retry after a lost answer) spends nothing and
// succeeds, unless the pass was revoked since. ErrPassUnknown,
// ErrPassRevoked or ErrPassUsedUp refuse it (counted as refused).
func (p *Passes) Redeem(ctx context.Context, ev, id, user string) (int, error) {
	res, err := p.redeem.Run(ctx, p.rdb, p.redeemKeys(ev, id), 0, user).Int64Slice()
	if err != nil || len(res) != 2 {
		return 0, fmt.Errorf("pass redeem %s: %v %w", ev, res, err)
	}
	switch res[0] {
	case 0, 5:
		return int(res[1]), nil
	case 1:
		return 0, ErrPassUnknown
	case 2:
		return int(res[1]), ErrPassRevoked
	default:
		return int(res[1]), ErrPassUsedUp
	}
}

// Refused counts a refusal decided before Redis (a genuine pass of event
// ev that expired).
func (p *Passes) Refused(ctx context.Context, ev, id string) error {
	if err := p.redeem.Run(ctx, p.rdb, p.redeemKeys(ev, id), 1, "").Err(); err != nil {
		return fmt.Errorf("pass refused %s: %w", ev, err)
	}
	return nil
}

// Revoke revokes pass id of event ev and returns it before and after.
// ErrPassUnknown for no such pass. Revoking a revoked pass changes nothing
// and returns the same record as before and after (so of two concurrent
// revocations exactly one sees a change).
func (p *Passes) Revoke(ctx context.Context, ev, id, by string, at time.Time) (before, after PassRecord, err error) {
	if before, err = p.Get(ctx, ev, id); err != nil {
		return before, after, err
	}
	code, err := p.revoke.Run(ctx, p.rdb, []string{passKey(ev, id), PassCountsKey(ev)}, by, at.Unix()).Int()
	if err != nil {
		return before, after, fmt.Errorf("pass revoke %s: %w", ev, err)
	}
	if code == 1 {
		return before, after, ErrPassUnknown
	}
	if after, err = p.Get(ctx, ev, id); err != nil {
		return before, after, err
	}
	if code == 2 { // revoked already, perhaps a moment ago by someone else
		before = after
	}
	return before, after, nil
}

// Get returns pass id of event ev, or ErrPassUnknown.
func (p *Passes) Get(ctx context.Context, ev, id string) (PassRecord, error) {
	m, err := p.rdb.HGetAll(ctx, passKey(ev, id)).Result()
	if err != nil {
		return PassRecord{}, fmt.Errorf("pass %s: %w", ev, err)
	}
	if len(m) == 0 {
		return PassRecord{}, ErrPassUnknown
	}
	num := func(k string) int64 { n, _ := strconv.ParseInt(m[k], 10, 64); return n }
	r := PassRecord{ID: m["id"], ExpiresAt: time.Unix(num("exp"), 0).UTC(), Uses: int(num("uses")), Used: int(num("used")),
		MintedBy: m["by"], MintedAt: time.Unix(num("at"), 0).UTC(), Note: m["note"], RevokedBy: m["revoked_by"]}
	if _, ok := m["revoked"]; ok {
		at := time.Unix(num("revoked"), 0).UTC()
		r.RevokedAt = &at
	}
	return r, nil
}

// List returns the passes of event ev, newest first.
func (p *Passes) List(ctx context.Context, ev string) ([]PassRecord, error) {
	ids, err := p.rdb.SMembers(ctx, passSetKey(ev)).Result()
	if err != nil {
		return nil, fmt.Errorf("passes %s: %w", ev, err)
	}
	out := make([]PassRecord, 0, len(ids))
	for _, id := range ids {
		r, err := p.Get(ctx, ev, id)
		if errors.Is(err, ErrPassUnknown) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].MintedAt.Equal(out[j].MintedAt) {
			return out[i].MintedAt.After(out[j].MintedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Counts returns event ev's pass counters (PassCountsKey).
func (p *Passes) Counts(ctx context.Context, ev string) (PassCounts, error) {
	m, err := p.rdb.HGetAll(ctx, PassCountsKey(ev)).Result()
	if err != nil {
		return PassCounts{}, fmt.Errorf("pass counts %s: %w", ev, err)
	}
	num := func(k string) int64 { n, _ := strconv.ParseInt(m[k], 10, 64); return n }
	return PassCounts{Minted: num("minted"), Redeemed: num("redeemed"), Revoked: num("revoked"), Refused: num("refused")}, nil
}

// PassPosition is the position an admission token bought with a bypass
// pass carries (tokens require one ≥ 1): far beyond any queue, so a claim
// made with it is told apart from the queue's, and no frontier, presence
// bitmap or no-show count ever sees it.
const PassPosition int64 = 1 << 50
