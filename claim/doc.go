// Package claim turns an admission into at most the units a user may hold,
// never more units than are on sale, and exactly one order per grant: its
// order event on NATS JetStream (and one per release), stored at least
// once and recorded once per claim id.
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
//     A node stalled past the window between steps 1 and 2 stores its copy
//     again: the stream may hold a grant twice, and every reader counts
//     claim ids (the worker, the rebuild, the report).
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
// A staff save that changes the stock (a new event, supply, reserve_units,
// buckets) is three steps, because the configuration and the buckets live
// in different Redis Cluster slots (Store.Hold, layfor.lua):
//
//	H  hold, on every bucket of both shapes: refuse unless the bucket's
//	   recorded server id is this server's (a new bucket may have none),
//	   the units sold or moved from it leave its new share ≥ 0 (stock +
//	   new share − laid share), the bucket count changes only before any
//	   grant, and the change is not locked by Redis TIME; then set the
//	   bucket's frozen marker to the save's token, with a lifetime
//	S  store the configuration (compare-and-set on its version, locks by
//	   Redis TIME: event.Store.PutBefore)
//	L  lay, on every bucket still held by the token: stock += new share −
//	   laid share; record the version (cv) and the share laid (laid)
//
// then release the hold. While a bucket is held, claims, transfers,
// releases and confirmations on it wait (frozen: ErrPaused, retry), a
// rebuild cannot freeze it and another save cannot hold it, so the check
// in H still holds at L: a save refused in H or S stores and lays
// nothing. Laying a change rather than a total keeps units granted before
// the save (bypass passes, early lanes) granted. A bucket that recorded
// another server's id, or that should hold stock and holds none, is never
// laid: its server may have lost grants (a promoted replica, lost data),
// so neither its id nor its stock may be adopted before a rebuild
// (ErrNeedsRebuild). A hold that outlives its lifetime (2× the request's
// deadline) is gone: L then refuses (ErrHoldLost) and the configuration is
// saved with its stock not laid; the next stock change lays the whole
// difference (versions are cumulative), and a rebuild — which reads the
// configuration after freezing — lays it too. A bucket a rebuild rewrote
// has no laid share; the stored configuration's share is its base.
// Readers of stock (Live, the node's view, the lifecycle's sold_out)
// count a bucket that is held or frozen, or was never laid, as not known:
// a sale is never judged sold out from it (a node that ticks between a
// save and its lay keeps what it knew).
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
// # Cancellation and the sweep
//
// Staff cancel granted claims, pending or confirmed, that the sweep
// (sweep.go: live claims grouped by shared signal values read from the
// claim records) found sharing signals: cancel.lua on the home bucket,
// all or nothing, marks each cancelled, returns its unit to the stock or
// not (restock, counted in stats restocked), and writes one
// order_cancelled event per claim (Nats-Msg-Id "<claim id>:cancelled")
// into the outbox, published like a release; see cancel.go. Units on sale
// = remaining + parked + granted − released − restocked; the rebuild
// (cancelled wins over confirmed and released: it acts on a live claim
// only), reconciliation, Live and the order worker count cancellations.
// A cancelled claim keeps its user's and its signals' slots.
//
// # Order worker
//
// Worker consumes the stream with explicit acks, marks the claim confirmed
// in Redis (confirm.lua: only if pending), records one Order per claim id
// in a JetStream key-value bucket with the status Redis answered (Create
// fails if the key exists: the dedupe that survives the finite duplicate
// window), then acks. Redis decides between a confirmation and a release
// (each script acts on a pending claim only), so an order is recorded
// confirmed only once Redis confirmed the claim, and a released event
// never turns it into released while Redis holds the claim confirmed. A
// granted event the fence voids (below) is recorded as a void order.
//
// # Reconciliation and rebuild
//
// Every few seconds Run compares, per event, the grants and releases Redis
// counts (minus those still in outboxes) with the stream's counts, and on a
// shortfall republishes, bounded, what the stream lacks.
//
// Rebuilder.Rebuild: pauses the event; freezes every bucket (every script
// on a frozen bucket refuses, on every node, whatever its snapshot says);
// publishes every outbox entry; publishes an epoch marker (below); reads
// all order events of the event from the stream, adding (and republishing,
// in the new epoch) any claim the Redis holds that the stream lacks, so a
// unit is never counted free that someone holds; and rewrites each bucket
// from them: claim records (confirmed if the worker recorded the order
// confirmed — even when a released event exists: the confirmation wins —
// else released if a released event exists, else pending with its
// deadline), each user's held claims, history and idempotency keys, stats,
// and stock = its share of (supply − reserve − distinct counted granted +
// their released), with the transfer state cleared, a new generation and
// the new epoch; then it unfreezes and restores the paused flag — unless
// the event's config was written meanwhile (an operator's pause or resume
// decides). Claims granted on the old primary but never published were
// never acknowledged to anyone, so dropping them is correct.
//
// # The failover fence
//
// After a Redis failover the promoted replica may lack writes it never
// received, and the old primary may go on taking them (a partition), so
// two fences keep a unit from being sold twice.
//
// The server fence, in Redis: every bucket records in its stats (field
// epoch) the replication id (INFO replication master_replid) of the server
// its stock was laid or rebuilt on. claim.lua, donate.lua, release.lua and
// confirm.lua compare it with their server's id on every call; a promoted
// replica — which takes a new id — refuses grants, transfers, releases and
// confirmations (ErrNeedsRebuild, 503 paused) on every node at once,
// whatever their views say, until the rebuild records the new id. So a
// claim the old primary confirmed cannot be released on a replica that
// lost the confirmation. A bucket with no recorded id refuses too: its
// server came back without its data (AOF lost, a replica promoted before
// its first sync), and starting afresh would forget its claims and
// idempotency keys. A refill skips a donor that refuses and tries the
// next; only when none gives is the refusal the answer (not "sold out").
//
// A Redis Cluster slot migration also moves a bucket to a server with
// another id, and it refuses the same way: from inside a script a
// migrated bucket (data intact) cannot be told from a server that
// restarted without the last second of its AOF (data lost), and guessing
// wrong oversells. The needed action is the same and safe in both cases:
// POST /admin/events/{id}/rebuild after the migration (the 503 problem's
// detail and the rebuild's own docs say so). Plan migrations outside sales.
//
// The stream fence, in JetStream: a grant decided on the old primary
// (cut off by a partition) or still in a NATS client's reconnect buffer
// can reach the stream after the rebuild read it; the rebuild did not
// count it. Every rebuild therefore publishes an epoch marker
// (EpochSubject, in the order stream) after flushing the outboxes and
// before reading the stream, and records the marker's stream sequence in
// each bucket it rewrites (stats field mark); claim.lua writes the
// bucket's mark into each granted event ("epoch"). One rule decides, the
// same for the publisher, the order worker and every later rebuild: a
// granted event stored at stream sequence S in epoch g is void when the
// first marker after g precedes S (the rebuild that published it read the
// stream without it). Publisher.PublishGrant checks the rule after the
// PubAck, which gives the grant's stream sequence S. A node on an external
// NATS runs Publisher.Follow: an ordered consumer delivers to it, headers
// only and gapless in stream order, every granted event and marker, so
// once its view has delivered S (its own grant, about when the PubAck
// arrives) it holds every marker before S and the check is local — no
// JetStream request per claim. A view more than half a second behind, or
// no view (the embedded server, whose direct gets answer cheaply:
// DirectGets), reads the stream instead: one shared read of the latest
// marker per round trip, then GetMsg next_by_subj on the marker subject
// when a marker follows the grant's epoch. A void grant answers
// ErrSuperseded (wraps ErrPaused: 503
// paused, retry) instead of 201 and stays in the outbox, so a replay of
// it is refused too. A grant stored before the marker is counted by the
// rebuild; one after it in the new epoch was decided on the rebuilt stock:
// either way no 201 is sent for a grant the rebuild did not count.
// (JetStream's Nats-Expected-Last-Subject-Sequence-Subject header would let
// the stream refuse such a publish itself, but a clustered stream rejects
// concurrent publishes carrying it for one subject, so the check runs
// after the PubAck.) The shipped Redis configuration adds
// min-replicas-to-write 1: a primary cut off from its replicas stops
// writing within seconds.
package claim
