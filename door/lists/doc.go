// Package lists keeps the door's block and eligibility lists: user ids,
// networks (CIDR), device ids and payment fingerprints, shared across
// sales or a sale's own.
//
// # The exact copy in a queue's slot
//
// The join checks a list exactly inside the script call it already makes
// (queue's join.lua), so the list's entries must sit in the same Redis
// Cluster slot as the queue's keys: each sale that references a list of
// user ids keeps a copy of it in every slot its joins use (CopyKey). The
// copy is a hash:
//
//	field: the first two bytes (big-endian) of an entry's 8-byte keyed hash
//	value: the other six bytes of every entry of that field, concatenated
//	       in ascending order
//
// internal/luascript's listhas.lua (list_has) reads it: one HGET and a
// binary search. An entry is the keyed hash of a value (Door.Hash), never
// the value.
package lists

import "encoding/binary"

// CopyKey is the key of list's exact copy in the slot of the queue whose
// key prefix is tag (queue.LaneTag's or a join shard's, "ar:{ev}:" or
// "ar:{ev.s}:").
func CopyKey(tag, list string) string {
	return tag + "list:" + list
}

// Arg is the 8-byte big-endian form of keyed hash h: list_has's argument.
func Arg(h uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], h)
	return string(b[:])
}
