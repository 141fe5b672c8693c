package lists

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

// saleRefs is what the store keeps of a sale whose door references lists
// (at salesKey, by sale id): the lists and the shape of its queue, which
// decide its copies. It is the index list -> sales (salesOf) too.
type saleRefs struct {
	Lists  []string `json:"lists"`
	Shards int      `json:"shards"`
	Lanes  bool     `json:"lanes,omitempty"`
}

// refsOf is cfg's saleRefs.
func refsOf(cfg *event.Config) saleRefs {
	r := saleRefs{Shards: max(cfg.JoinShards, 1), Lanes: len(cfg.Lanes) > 0}
	for _, name := range slices.Concat(cfg.Door.BlockLists, cfg.Door.EligibleLists) {
		if !slices.Contains(r.Lists, name) {
			r.Lists = append(r.Lists, name)
		}
	}
	return r
}

// copySpec is one exact copy: its key, and which entries it holds (those
// whose FNV mod shards is shard; every entry when shards is 0).
type copySpec struct {
	key           string
	shards, shard uint32
}

// holds reports whether the copy holds an entry of FNV f.
func (c copySpec) holds(f uint32) bool { return c.shards == 0 || f%c.shards == c.shard }

// copies are sale ev's copies of list (of kind k): none for a network
// list (nodes check networks exactly). A sale of one join shard has one,
// in its queue's slot; of S shards, one per shard holding the user ids of
// that shard's joins (a device or payment list: all of it in each), and,
// when the sale has lanes (whose queues share the event's slot), one
// whole copy in the event's slot.
func (r saleRefs) copies(ev, list string, k Kind) []copySpec {
	if !k.ids() {
		return nil
	}
	whole := copySpec{key: CopyKey(queue.LaneTag(ev, 0), list)}
	if r.Shards <= 1 {
		return []copySpec{whole}
	}
	var out []copySpec
	for s := range r.Shards {
		c := copySpec{key: CopyKey(queue.ShardTag(ev, s), list)}
		if k == KindUser {
			c.shards, c.shard = uint32(r.Shards), uint32(s)
		}
		out = append(out, c)
	}
	if r.Lanes {
		out = append(out, whole)
	}
	return out
}

// copyKeys are the keys of every copy sale ev may have of list, whatever
// its kind.
func (r saleRefs) copyKeys(ev, list string) []string {
	var out []string
	for _, c := range r.copies(ev, list, KindDevice) {
		out = append(out, c.key)
	}
	return out
}

// saleUse is a sale referencing a list.
type saleUse struct {
	ev   string
	refs saleRefs
}

// salesOf returns the sales whose doors reference list name, by id.
func (s *Store) salesOf(ctx context.Context, name string) ([]saleUse, error) {
	all, err := s.rdb.HGetAll(ctx, salesKey).Result()
	if err != nil {
		return nil, fmt.Errorf("lists: sales of %s: %w", name, err)
	}
	var out []saleUse
	for ev, raw := range all {
		var r saleRefs
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			return nil, fmt.Errorf("lists: refs of sale %s: %w", ev, err)
		}
		if slices.Contains(r.Lists, name) {
			out = append(out, saleUse{ev, r})
		}
	}
	slices.SortFunc(out, func(a, b saleUse) int {
		if a.ev < b.ev {
			return -1
		}
		return 1
	})
	return out, nil
}

// Sync makes the exact copies sale cfg's door needs, and drops those it
// no longer needs: for every list of ids named by cfg.Door.BlockLists and
// EligibleLists, a copy in each slot its joins use (copies). A copy
// already at the list's Version, for a queue of the same shape, is kept.
// From then on every change of a list reaches the sale's copies before
// the list's Version changes. ErrUnknownList, naming it, when a list does
// not exist (nothing changed). A sale that references no list (or a
// deleted sale: Forget) keeps no copies. Answered once the Redis
// replicas hold the copies: an error wrapping event.ErrNotReplicated
// when they did not copy them within event.ReplicaWait (the copies
// stand on the primary).
func (s *Store) Sync(ctx context.Context, cfg *event.Config) error {
	next := refsOf(cfg)
	metas := map[string]Meta{}
	for _, name := range next.Lists {
		m, err := s.Get(ctx, name)
		if errors.Is(err, ErrNoList) {
			return fmt.Errorf("%w: %q", ErrUnknownList, name)
		}
		if err != nil {
			return err
		}
		metas[name] = m
	}
	return s.confirmed(ctx, s.syncRefs(ctx, cfg.ID, next, metas))
}

// Forget drops sale ev's copies and its references (a deleted sale),
// then waits for the replicas as Sync does.
func (s *Store) Forget(ctx context.Context, ev string) error {
	return s.confirmed(ctx, s.syncRefs(ctx, ev, saleRefs{}, nil))
}

func (s *Store) syncRefs(ctx context.Context, ev string, next saleRefs, metas map[string]Meta) error {
	var prev saleRefs
	raw, err := s.rdb.HGet(ctx, salesKey, ev).Result()
	switch {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return fmt.Errorf("lists: refs of sale %s: %w", ev, err)
	default:
		if err := json.Unmarshal([]byte(raw), &prev); err != nil {
			return fmt.Errorf("lists: refs of sale %s: %w", ev, err)
		}
	}
	// The references first: a list named here can no longer be deleted,
	// and a change of it from now on rebuilds this sale's copies.
	if len(next.Lists) == 0 {
		err = s.rdb.HDel(ctx, salesKey, ev).Err()
	} else {
		b, _ := json.Marshal(next)
		err = s.rdb.HSet(ctx, salesKey, ev, b).Err()
	}
	if err != nil {
		return fmt.Errorf("lists: refs of sale %s: %w", ev, err)
	}
	keep := map[string]bool{}
	for _, name := range next.Lists {
		for _, k := range next.copyKeys(ev, name) {
			keep[k] = true
		}
	}
	for _, name := range prev.Lists {
		var drop []string
		for _, k := range prev.copyKeys(ev, name) {
			if !keep[k] {
				drop = append(drop, k)
			}
		}
		for _, k := range drop { // one key a command: copies sit in different slots
			if err := s.rdb.Del(ctx, k).Err(); err != nil {
				return fmt.Errorf("lists: drop copy %s: %w", k, err)
			}
		}
		if !slices.Contains(next.Lists, name) {
			if err := s.rdb.HDel(ctx, copiedKey, ev+"\x00"+name).Err(); err != nil {
				return fmt.Errorf("lists: drop copy of %s: %w", name, err)
			}
		}
	}
	sameShape := prev.Shards == next.Shards && prev.Lanes == next.Lanes
	for _, name := range next.Lists {
		m := metas[name]
		if !m.Kind.ids() {
			continue
		}
		if sameShape {
			v, err := s.rdb.HGet(ctx, copiedKey, ev+"\x00"+name).Int64()
			if err != nil && !errors.Is(err, redis.Nil) {
				return fmt.Errorf("lists: copy of %s: %w", name, err)
			}
			if err == nil && v == m.Version {
				continue
			}
		}
		if err := s.syncList(ctx, ev, next, name); err != nil {
			return err
		}
	}
	return nil
}

// syncList rebuilds sale ev's copies of list name, under its lock.
func (s *Store) syncList(ctx context.Context, ev string, refs saleRefs, name string) error {
	unlock, err := s.lock(ctx, name)
	if err != nil {
		return err
	}
	defer unlock()
	m, err := s.Get(ctx, name)
	if errors.Is(err, ErrNoList) {
		return fmt.Errorf("%w: %q", ErrUnknownList, name)
	}
	if err != nil {
		return err
	}
	c, err := s.readContent(ctx, name, m.Kind)
	if err != nil {
		return err
	}
	return s.buildCopies(ctx, ev, refs, m, c)
}

// buildCopies writes sale ev's copies of list m from its entries c, each
// renamed into place whole, and records the Version they hold.
func (s *Store) buildCopies(ctx context.Context, ev string, refs saleRefs, m Meta, c *content) error {
	for _, cp := range refs.copies(ev, m.Name, m.Kind) {
		err := s.replaceHash(ctx, cp.key, func(set func(string, []byte) error) error {
			field, value := -1, []byte(nil)
			for _, b := range c.buckets {
				for i := 0; i+idRecordSize <= len(b); i += idRecordSize {
					r := b[i : i+idRecordSize]
					if !cp.holds(binary.BigEndian.Uint32(r[8:])) {
						continue
					}
					if f := int(binary.BigEndian.Uint16(r)); f != field {
						if field >= 0 {
							if err := set(copyField(field), value); err != nil {
								return err
							}
						}
						field, value = f, nil
					}
					value = append(value, r[2:8]...)
				}
			}
			if field < 0 {
				return nil
			}
			return set(copyField(field), value)
		})
		if err != nil {
			return err
		}
	}
	if err := s.rdb.HSet(ctx, copiedKey, ev+"\x00"+m.Name, m.Version).Err(); err != nil {
		return fmt.Errorf("lists: copies of %s: %w", m.Name, err)
	}
	return nil
}

// copyField is a copy's field f: the first two bytes of its entries'
// hashes.
func copyField(f int) string { return string([]byte{byte(f >> 8), byte(f)}) }
