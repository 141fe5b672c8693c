package claim

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The sweep: after (or during) a sale, staff look for granted claims —
// pending or confirmed, not released or cancelled — that share a signal
// value: a device, a payment instrument, a phone, an address, a client
// network (/24 IPv4, /64 IPv6) or a claim of the shop's identity token the
// sale names. Each claim lists in its record ("sig", written by claim.lua)
// the keys of the signal sets it counts in, and a key names the signal's
// dimension and the value's keyed hash: the sweep reads those, never a
// raw value.
//
// It reads the claim records from Redis, every bucket's hash with HSCAN
// (SweepScanCount fields a call, one pipelined round per step over all
// buckets, split per shard on a Redis Cluster), not from the order
// stream: the records hold the signals and each claim's status now
// (pending, confirmed, released, cancelled), while the stream's granted
// events carry no signals and would have to be replayed against the
// releases, cancellations and the order worker's records to learn a
// status. HSCAN keeps each step short, so a sweep during a sale never
// blocks the claim scripts behind one long command.

// Signal dimensions the sweep groups by besides the four limited ones:
// the client's network, and claims of the shop's identity token
// (SignalToken + the claim's name).
const (
	SignalNetwork = "network"
	SignalToken   = "token:"
)

// Weight is how strongly sharing a value of dimension dim suggests one
// person (or one ring): a payment instrument or a phone number is rarely
// shared by strangers (5), nor a shipping address (4); a device is shared
// by a family (3), as are the shop's own identity claims (3, the shop
// decides what they mean); a network (/24, /64) is shared by every
// customer of a carrier's NAT or an office (1). A group's score is its
// size times its weight.
func Weight(dim string) int {
	switch {
	case dim == SignalPayment || dim == SignalPhone:
		return 5
	case dim == SignalAddress:
		return 4
	case dim == SignalDevice || strings.HasPrefix(dim, SignalToken):
		return 3
	case dim == SignalNetwork:
		return 1
	}
	return 0
}

// SweepClaim is one claim of a group.
type SweepClaim struct {
	ID     string `json:"claim_id"`
	User   string `json:"user"`
	Status Status `json:"status"`
}

// SweepGroup is the granted claims that share one signal value.
type SweepGroup struct {
	// Dim is the signal: device, payment, phone, address, network or
	// token:<claim>.
	Dim string `json:"dimension"`
	// Hash is the value's keyed hash (hex), never the value.
	Hash string `json:"hash"`
	// Size is how many claims share it; Users how many distinct users.
	Size  int `json:"size"`
	Users int `json:"users"`
	// Score is Size × Weight(Dim).
	Score int `json:"score"`
	// Claims are the group's claims, by claim id; at most
	// SweepOptions.MaxClaims of them (Size says how many there are).
	Claims []SweepClaim `json:"claims"`
}

// Sweep is the answer of Store.Sweep.
type Sweep struct {
	// Granted counts the live (pending or confirmed) claims read;
	// Groups the groups found, of which Listed are in Groups.
	Granted int          `json:"granted"`
	Total   int          `json:"total_groups"`
	Groups  []SweepGroup `json:"groups"`
}

// SweepOptions bound a sweep's answer.
type SweepOptions struct {
	// Limit is how many groups are listed, the highest scores first;
	// Offset skips that many first.
	//
	// Default: 100 (at most MaxSweepGroups)
	Limit, Offset int
	// MinSize is the smallest group listed.
	//
	// Default: 2
	MinSize int
	// MaxClaims bounds the claims listed per group.
	//
	// Default: 200
	MaxClaims int
	// Dim, when set, lists groups of that dimension only.
	Dim string
}

// Limits of a sweep.
const (
	MaxSweepGroups = 1000
	SweepScanCount = 2000
)

// sweepRecord is what the sweep reads of a claim record.
type sweepRecord struct {
	User   string   `json:"user"`
	Status Status   `json:"status"`
	Sig    []string `json:"sig"`
}

// parseSweepRecord reads user, status and signals from a record as
// claim.lua writes it ({"user":"…",…,"status":"…",…,"sig":["…",…]}),
// without a JSON decoder: the sweep reads 100,000 of them. A record it
// cannot read that way (an escaped character, another writer's layout)
// is decoded as JSON. ok is false for a record without signals.
func parseSweepRecord(raw string) (r sweepRecord, ok bool, err error) {
	i := strings.Index(raw, `,"sig":["`)
	if i < 0 {
		return r, false, nil
	}
	user, u := quoted(raw, `{"user":"`)
	status, st := quoted(raw, `"status":"`)
	sig := raw[i+len(`,"sig":["`):]
	end := strings.Index(sig, `"]`)
	if !u || !st || end < 0 || strings.IndexByte(raw, '\\') >= 0 {
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			return r, false, err
		}
		return r, len(r.Sig) > 0, nil
	}
	r.User, r.Status = user, Status(status)
	r.Sig = strings.Split(sig[:end], `","`)
	return r, true, nil
}

// quoted returns the string that follows prefix in raw up to the next
// quote.
func quoted(raw, prefix string) (string, bool) {
	i := strings.Index(raw, prefix)
	if i < 0 {
		return "", false
	}
	v := raw[i+len(prefix):]
	j := strings.IndexByte(v, '"')
	if j < 0 {
		return "", false
	}
	return v[:j], true
}

// Sweep groups sale's live claims by shared signal values (see above),
// highest score first (then larger, then by dimension and hash), and
// lists opt's page of them.
func (s *Store) Sweep(ctx context.Context, sale Sale, opt SweepOptions) (Sweep, error) {
	if opt.Limit <= 0 {
		opt.Limit = 100
	}
	opt.Limit = min(opt.Limit, MaxSweepGroups)
	opt.Offset = max(opt.Offset, 0)
	if opt.MinSize < 2 {
		opt.MinSize = 2
	}
	if opt.MaxClaims <= 0 {
		opt.MaxClaims = 200
	}
	// Claims are kept once each, groups as indexes into them, keyed by
	// "<dim>:<hash>" (a substring of the record: no copy).
	size, err := s.recordCount(ctx, sale)
	if err != nil {
		return Sweep{}, err
	}
	// Most values are one claim's: first holds those, groups the values
	// seen twice or more (no slice per singleton).
	claims := make([]SweepClaim, 0, size)
	first := make(map[string]int32, 2*size)
	groups := map[string][]int32{}
	out := Sweep{}
	err = s.scanRecords(ctx, sale, func(id string, raw string) error {
		r, ok, err := parseSweepRecord(raw)
		if err != nil {
			return fmt.Errorf("sweep %s: claim %s: %w", sale.ID, id, err)
		}
		if !ok || (r.Status != StatusPending && r.Status != StatusConfirmed) {
			return nil
		}
		out.Granted++
		at := int32(-1)
		for _, key := range r.Sig {
			_, sig, found := strings.Cut(key, "}:sig:")
			if !found || (opt.Dim != "" && !strings.HasPrefix(sig, opt.Dim+":")) {
				continue
			}
			if at < 0 {
				at = int32(len(claims))
				claims = append(claims, SweepClaim{ID: id, User: r.User, Status: r.Status})
			}
			if g, ok := groups[sig]; ok {
				groups[sig] = append(g, at)
			} else if j, ok := first[sig]; ok {
				groups[sig] = []int32{j, at}
			} else {
				first[sig] = at
			}
		}
		return nil
	})
	if err != nil {
		return Sweep{}, err
	}
	list := make([]SweepGroup, 0)
	for sig, idx := range groups {
		if len(idx) < opt.MinSize {
			continue
		}
		i := strings.LastIndexByte(sig, ':')
		if i <= 0 {
			continue
		}
		dim, hash := sig[:i], sig[i+1:]
		users := make(map[string]struct{}, len(idx))
		for _, j := range idx {
			users[claims[j].User] = struct{}{}
		}
		cs := make([]SweepClaim, len(idx))
		for k, j := range idx {
			cs[k] = claims[j]
		}
		list = append(list, SweepGroup{Dim: dim, Hash: hash, Size: len(idx), Users: len(users), Score: len(idx) * Weight(dim), Claims: cs})
	}
	slices.SortFunc(list, func(a, b SweepGroup) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(b.Size, a.Size), cmp.Compare(a.Dim, b.Dim), cmp.Compare(a.Hash, b.Hash))
	})
	out.Total = len(list)
	list = list[min(opt.Offset, len(list)):]
	list = list[:min(opt.Limit, len(list))]
	for i := range list {
		g := &list[i]
		slices.SortFunc(g.Claims, func(a, b SweepClaim) int { return cmp.Compare(a.ID, b.ID) })
		g.Claims = slices.Clip(g.Claims[:min(opt.MaxClaims, len(g.Claims))])
	}
	out.Groups = list
	return out, nil
}

// Group returns the live (pending or confirmed) claims of sale that share
// signal value hash of dimension dim, read from the signal's set in every
// bucket (claim.lua adds a claim to it; a release takes it out; a
// cancelled claim stays but is not live).
func (s *Store) Group(ctx context.Context, sale Sale, dim, hash string) ([]SweepClaim, error) {
	if !knownDim(dim) || !isHex(hash) || len(hash) < 16 || len(hash) > 64 {
		return nil, nil
	}
	sets := make([]*redis.StringSliceCmd, sale.Buckets)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range sale.Buckets {
			sets[b] = p.SMembers(ctx, bucketOf(sale.ID, b).signal(dim, hash))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("group %s: %w", sale.ID, err)
	}
	var out []SweepClaim
	for b := range sale.Buckets {
		ids := sets[b].Val()
		if len(ids) == 0 {
			continue
		}
		raws, err := s.rdb.HMGet(ctx, bucketOf(sale.ID, b).records(), ids...).Result()
		if err != nil {
			return nil, fmt.Errorf("group %s/%d: %w", sale.ID, b, err)
		}
		for i, raw := range raws {
			str, _ := raw.(string)
			var r sweepRecord
			if str == "" || json.Unmarshal([]byte(str), &r) != nil || (r.Status != StatusPending && r.Status != StatusConfirmed) {
				continue
			}
			out = append(out, SweepClaim{ID: ids[i], User: r.User, Status: r.Status})
		}
	}
	slices.SortFunc(out, func(a, b SweepClaim) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// recordCount returns how many claim records sale's buckets hold (HLEN,
// one pipelined round trip).
func (s *Store) recordCount(ctx context.Context, sale Sale) (int, error) {
	cmds := make([]*redis.IntCmd, sale.Buckets)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range sale.Buckets {
			cmds[b] = p.HLen(ctx, bucketOf(sale.ID, b).records())
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sweep %s: %w", sale.ID, err)
	}
	n := 0
	for _, c := range cmds {
		n += int(c.Val())
	}
	return n, nil
}

// scanRecords calls f with every claim record of sale's buckets, read with
// HSCAN, one pipelined round over every bucket still scanning per step.
// The next round is asked for while f reads the last one.
func (s *Store) scanRecords(ctx context.Context, sale Sale, f func(id, raw string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rounds := make(chan []*redis.ScanCmd, 1)
	errc := make(chan error, 1)
	go func() {
		defer close(rounds)
		cursors := make([]uint64, sale.Buckets)
		open := make([]int, sale.Buckets)
		for b := range open {
			open[b] = b
		}
		for len(open) > 0 {
			cmds := make([]*redis.ScanCmd, len(open))
			_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i, b := range open {
					cmds[i] = p.HScan(ctx, bucketOf(sale.ID, b).records(), cursors[b], "", SweepScanCount)
				}
				return nil
			})
			if err != nil {
				errc <- fmt.Errorf("sweep %s: %w", sale.ID, err)
				return
			}
			next := open[:0]
			for i, b := range open {
				if _, cursors[b] = cmds[i].Val(); cursors[b] != 0 {
					next = append(next, b)
				}
			}
			open = next
			select {
			case rounds <- cmds:
			case <-ctx.Done():
				return
			}
		}
	}()
	for cmds := range rounds {
		for _, c := range cmds {
			kv, _ := c.Val()
			for j := 0; j+1 < len(kv); j += 2 {
				if err := f(kv[j], kv[j+1]); err != nil {
					return err
				}
			}
		}
	}
	select {
	case err := <-errc:
		return err
	default:
		return ctx.Err()
	}
}
