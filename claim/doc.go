// Package claim turns an admission into at most the units a user may hold,
// never more units than are on sale, and exactly one order event on NATS
// JetStream per grant (and per release).
//
// # Buckets
//
// An event's units on sale (supply − reserve_units) are laid evenly over
// `buckets` buckets. Every key of bucket b carries the hash tag
// {event#b}, so every script below touches one Redis Cluster slot. A user's
// home bucket is fnv32a(user) mod buckets; it holds all of the user's claim
// state: held claims (the per-user limit counts them), claim history,
// idempotency keys and claim records. Claim ids start with the home bucket.
//
// # Claim
//
//  1. claim.lua on the home bucket h decides atomically: frozen → paused;
//     replay (idempotency key known) → the earlier claim; limit reached →
//     the held claim ids; h's stock empty → "empty"; otherwise decrement
//     h's stock, record the claim, index its expiry deadline and write its
//     granted order event into h's outbox, in the same step. Several
//     concurrent requests for h may share one call (micro-batching, see
//     WithBatch); the script decides them in order, each as if alone.
//  2. The order event is published to JetStream with Nats-Msg-Id = claim id
//     and the caller waits for the PubAck. Only then is the claim answered
//     with 201: JetStream holds every claim a client was told about.
//  3. Acknowledged entries are removed from the outbox in batches. A sweeper
//     republishes entries older than a few seconds (the node that granted
//     them may have died between steps 1 and 2); JetStream's duplicate window
//     and the order worker's dedupe by claim id make the republish harmless.
//
// A replay whose order event is still in the outbox publishes it
// (idempotently) before it is answered.
//
// # Stock transfers
//
// When h is empty, the claim refills h from a donor bucket d ≠ h and runs
// claim.lua again (a bounded number of times). The per-user limit and
// idempotency never leave h, so they stay exact; only units move, in three
// single-slot steps:
//
//	T1 donate.lua on d:  stock_d −= n (n ≤ half of stock_d, ≥ 1);
//	                     xfer_d[t] = {to: h, n, gen_d, at}; parked_d += n
//	T2 accept.lua on h:  if gen_h ≠ gen: refuse (stale); if t ∉ xin_h:
//	                     xin_h += {t}; stock_h += n   (else: a repeat, no-op)
//	T3 settle.lua on d:  delete xfer_d[t]; parked_d −= n
//
// A unit is always in exactly one place: a bucket's stock, a pending record
// not yet credited, or a claim. T2 credits a transfer id at most once, and
// only after T1 debited it, so units are never created: a crash between T1
// and T2 parks n units in d's record (an undersell for a moment, never an
// oversell); a crash between T2 and T3 leaves a record T2 already credited.
// The recovery sweep in Run re-runs T2 and T3 for records older than a few
// seconds; both are idempotent, so the sweep and a slow donor may race. A
// rebuild starts a new generation in every bucket, so a record written
// before it can never be credited after it (its units are already counted).
//
// Donors are chosen from the node's per-bucket stock view (refreshed every
// tick), skipping buckets it shows empty, from a random start; if none
// gives, every bucket's stock and parked units are read. The answer is
// "sold out" only when no bucket holds stock and no units are in transit;
// units in transit make the claim retry, and after a few refills it gives
// up with a retryable error.
//
// # Laying stock
//
// Staff changes save the configuration first and lay its stock after
// (LayFor): each bucket remembers the configuration version its stock was
// laid for and skips an older one, and a bucket whose sale has started by
// Redis TIME, or that has granted units, is never laid again.
//
// # Release and expiry
//
// release.lua on the claim's bucket moves a pending claim to released
// exactly once: stock+1, the claim leaves the user's held set (so they may
// claim again), stats released+1, its expiry entry goes, and a released
// order event (Nats-Msg-Id "<claim id>:released") enters the outbox, all in
// one step. Releasing a released claim again changes nothing; a confirmed
// claim is never released. A user or an admin releases through
// Service.Release; Run releases pending claims past their deadline
// (claim_ttl_seconds after the grant, by Redis TIME), a bounded number per
// bucket per tick.
//
// # Order worker
//
// Worker consumes the stream with explicit acks, records one Order per
// claim id in a JetStream key-value bucket (Create fails if the key exists:
// the dedupe that survives the finite duplicate window), then marks the
// claim confirmed in Redis (confirm.lua: only if pending), then acks.
//
// # Reconciliation and rebuild
//
// Every few seconds Run compares, per event, the grants and releases Redis
// counts (minus those still in outboxes) with the stream's counts, and on a
// shortfall republishes, bounded, what the stream lacks.
//
// After a Redis failover the promoted replica may lack writes it never
// received, so until a rebuild its stock must not be trusted. The fence:
// every bucket records in its stats the replication id (INFO replication
// master_replid) of the server its stock was laid or rebuilt on; claim.lua
// and donate.lua compare it with their server's id on every call, and a
// promoted replica — which takes a new id — refuses grants and transfers
// (ErrNeedsRebuild, 503 paused) on every node at once, whatever their
// views say, until the rebuild records the new id. Rebuilder.Rebuild: pauses the event; freezes every bucket
// (every script on a frozen bucket refuses, on every node, whatever its
// snapshot says); publishes every outbox entry; reads all order events of
// the event from the stream, adding (and republishing) any claim the
// promoted Redis holds that the stream lacks, so a unit is never counted
// free that someone holds; and rewrites each bucket from them: claim
// records (released if a released event exists, confirmed if the worker
// recorded the order, else pending with its deadline), each user's held
// claims, history and idempotency keys, stats, and stock = its share of
// (supply − reserve − distinct granted + distinct released), with the
// transfer state cleared and a new generation; then it unfreezes and
// restores the paused flag. Claims granted on the old primary but never
// published were never acknowledged to anyone, so dropping them is correct.
package claim
