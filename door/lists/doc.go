// Package lists keeps the door's block and eligibility lists: user ids,
// networks (CIDR), device ids and payment fingerprints, shared across
// sales or a sale's own ("<event id>.<name>"). It owns their storage in
// Redis (Store), the exact copies the join script reads, and each node's
// compact view of them (Set, the door.Lists the door checks).
//
// # Values are kept as keyed hashes
//
// A list of ids (user, device, payment) never holds an id: it holds the
// id's 8-byte keyed hash, SipHash-2-4 under a 128-bit key made once per
// deployment (16 random bytes SET NX at ar:lists:hashkey by the first
// node or command that needs it, read by every node at start: Store.Init).
// Without the key nobody can tell which hashes stand for which ids. The
// key is never replaced: missing while lists exist (lost data), a
// starting node refuses to make another and a running one puts its own
// back at its next Refresh; back it up with the rest of Redis.
// Beside each hash a user list keeps the 4-byte FNV-1a-32 of the raw id,
// queue's shard hash (queue.ShardOf, not a secret: anyone holding a
// ticket can compute it), so a sale's copies can be split over its join
// shards. Export gives an id list's hashes in hex, never the ids. A
// network list keeps its networks exactly, normalised (masked, an
// IPv4-mapped address as IPv4).
//
// # Redis layout
//
//	ar:lists:meta             hash: list name -> Meta (JSON); the versions
//	                          hash every node polls (one HGETALL a tick)
//	ar:lists:clock            INCR: a change's Version
//	ar:list:{name}:e          the list's entries: 4,096 fields (a bucket's
//	                          number, 2 bytes) of sorted records (12 bytes
//	                          an id: hash, FNV; 17 a network)
//	ar:list:{name}:lock       serialises the list's changes across nodes
//	ar:lists:sales            hash: sale id -> the lists its door names and
//	                          the shape of its queue (Sync): the index list
//	                          -> sales
//	ar:lists:copied           hash: "<sale>\x00<list>" -> Version its
//	                          copies hold
//	ar:{ev}:list:<name>       a sale's exact copy (CopyKey), below; with S
//	ar:{ev.s}:list:<name>     join shards one per shard
//
// A bulk load parses and checks its whole upload before changing
// anything (a malformed line: *LineError, nothing applied), then writes
// the list and each copy under a temporary key in the same slot, in
// bounded commands and pipelines (256 fields or 256 KB a command, 4 MB a
// pipeline: Redis never blocks for long), and renames it into place: a
// join sees the old list or the new one. The Version changes last.
//
// # The exact copy in a queue's slot
//
// The join checks a list exactly inside the script call it already makes
// (queue's join.lua), so the list's entries must sit in the same Redis
// Cluster slot as the queue's keys: each sale that references a list of
// ids keeps a copy of it in every slot its joins use (CopyKey). The
// copy is a hash:
//
//	field: the first two bytes (big-endian) of an entry's 8-byte keyed hash
//	value: the other six bytes of every entry of that field, concatenated
//	       in ascending order
//
// internal/luascript's listhas.lua (list_has) reads it: one HGET and a
// binary search. An entry is the keyed hash of a value (Door.Hash), never
// the value. A sale of one join shard has one copy, in its queue's slot
// (queue.LaneTag(ev, 0)); of S shards, one per shard (queue.ShardTag),
// holding the user ids whose FNV mod S is the shard (a device or payment
// list: all of it, in each), plus a whole copy in the event's slot when
// the sale has lanes. Network lists have none: nodes check them exactly.
//
// # Memory
//
// Measured (bench/RESULTS.md, "Door lists"): in Redis about 13 bytes an
// entry for the list and 6.5 to 9.5 for one sale's copy (the copy's
// 65,536 fields weigh more on a smaller list), 23 bytes an entry in all
// at a million entries and at ten million; on a node, 2.26 bytes an
// entry (a binary fuse filter of 16-bit fingerprints, a false "maybe"
// once in 65,536), 8 bytes an IPv4 range and 32 an IPv6 range.
package lists

import (
	"encoding/binary"

	"github.com/anteroom/anteroom/queue"
)

// CopyKey is the key of list's exact copy in the slot of the queue whose
// key prefix is tag (queue.LaneTag's or a join shard's, "ar:{ev}:" or
// "ar:{ev.s}:").
func CopyKey(tag, list string) string {
	return tag + "list:" + list
}

// JoinCopyTag is the key prefix (CopyKey's tag) of the copies that user's
// join to sale ev at t reads: its join shard's in the default lane of a
// sharded sale, else the event's (queue.LaneTag(ev, 0)). A lane's queue
// shares the event's slot under a prefix of its own (queue.JoinTag),
// which holds no copy: its joins read the whole copy the event's slot
// keeps for a sale with lanes.
func JoinCopyTag(ev, user string, t queue.Times) string {
	if t.Lane > 0 {
		return queue.LaneTag(ev, 0)
	}
	return queue.JoinTag(ev, user, t)
}

// Arg is the 8-byte big-endian form of keyed hash h: list_has's argument.
func Arg(h uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], h)
	return string(b[:])
}
