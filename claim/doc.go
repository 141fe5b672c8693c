// Package claim turns an admission into at most the units a user may hold,
// never more units than are on sale, and exactly one order event on NATS
// JetStream per grant.
//
// The protocol, one claim:
//
//  1. The user's home bucket is fnv32a(user) mod buckets. Every key a claim
//     touches (stock, the user's claim set, the idempotency key, the claim
//     records, the outbox, the stats) carries that bucket's hash tag, so one
//     Lua script (claim.lua) decides atomically on one Redis Cluster shard:
//     replay → the earlier claim; limit reached → the held claim ids; no
//     stock → sold out; otherwise decrement stock, record the claim and write
//     its order event into the bucket's outbox in the same step.
//  2. The order event is published to JetStream with Nats-Msg-Id = claim id
//     and the caller waits for the PubAck. Only then is the claim answered
//     with 201: JetStream holds every claim a client was told about.
//  3. Acknowledged entries are removed from the outbox in batches. A sweeper
//     republishes entries older than a few seconds (the node that granted
//     them may have died between steps 1 and 2); JetStream's duplicate window
//     and the order worker's dedupe by claim id make the republish harmless.
//
// A replay (same idempotency key, or the same admission token without one)
// finds the earlier claim; if its order event is still in the outbox it is
// published (idempotently) and acknowledged before the replay is answered.
package claim
