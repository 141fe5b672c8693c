// Package queue owns a sale's queue: who joined, in which order, and at
// which position each person stands. It does not decide who is admitted
// (package admission moves the frontier over the positions queue gives) nor
// what a person may buy (package claim).
//
// # What it owns
//
//   - Sequence numbers. Joiner.Join runs join.lua: one sequence number per
//     user per queue, from a counter in Redis (the key KeysFor(ev).Seq),
//     and a second join returns the very same entry. A user's entry is
//     packed into one small hash field (seq × 2^22 + the second they
//     joined), which keeps a waiting person under 100 bytes of Redis.
//     Concurrent joins of one queue share one script call, handled one
//     after another exactly as separate calls would be.
//   - Join shards. With join_shards S > 1 a user joins shard ShardOf(user,
//     S) and counts within it; every shard is its own Redis Cluster slot.
//     Order is a node's view of the global order, built from ReadShard
//     reads; a position is final once its arrival second is settled.
//   - Lanes. A lane is a queue of its own (KeysForLane); Laned and Unlane
//     carry the lane in a seq as lane × 2^40 + n.
//   - The window's permutation. When the window closes its size W is
//     frozen (the key KeysFor(ev).Window, set once from the counter by the
//     first join, shard read or frontier step after the window's end,
//     judged by Redis TIME). Permutation
//     is the keyed pseudo-random permutation π of 1..W, keyed by the
//     event's seed (published as a commitment first, revealed when the
//     window closes; LaneSeed for a lane's draw); Position gives window
//     members π(seq) and later joiners seq. Anyone can recompute their
//     position: the algorithm, anteroom/v1, is documented on Permutation
//     and in docs/verify.md.
//
// Every script orders by Redis TIME, never by a node's clock, and refuses
// a caller whose view of the sale is older than its Times.Until
// (ErrStaleView), so a staff change of the sale's instants is never
// overtaken by a join judged against the old ones. Every key of one call
// shares one hash tag (the event's, a lane's or a join shard's): safe on
// Redis Cluster.
//
// # What a Redis failover does
//
// Redis replicates asynchronously, so writes the old primary answered in
// its last moments may be missing on the promoted replica
// (min-replicas-to-write bounds how many):
//
//   - The sequence counter may stand where the replica had it, below
//     sequence numbers whose people keep signed tickets. join.lua fences
//     each counter (failover.go): it records the replication id the
//     counter is kept on and its pace (the most sequence numbers given in
//     one second), and the first join on another id (a promoted replica,
//     a server restored from an older copy, a slot migration) moves the
//     counter past max(counter, the caller's highest) by that pace times
//     FailoverSpan + 1 s: the old primary writes alone for at most
//     deploy/redis's min-replicas-max-lag plus a second. Every Joiner
//     also reports, with each join, the highest sequence number it has
//     seen of that counter, and the counter never stands below a report:
//     every ticket a live node handed out stays below it, whatever the
//     pace. A shard read (readshard.lua) and a frontier step (admission's
//     advance.lua) fence the counter the same way before they freeze W
//     from it, so whichever script runs first on a promoted server, W is
//     frozen past the lost joins and their people keep their places in
//     the window (TestFirstReadAfterLaggingFailoverGivesNoPositionTwice).
//     A queue with no fence on a promoted server (born in the lost
//     writes) moves as at a pace of one a second; a promoted server whose
//     fence names another id than the one it followed moves twice as far
//     (its old primary took a new id, as a primary does when its first
//     replica attaches, and moved past its own fence in the lost writes).
//     No sequence number is given twice, so no position is (the tests:
//     TestJoinAfterLaggingFailover, TestJoinAfterLaggingFailoverAttachedLate).
//     The bound's limit: a node that died with tickets it never reported,
//     after a burst faster than any second the promoted copy recorded.
//     The jump leaves unheld sequence numbers: in the window they are
//     positions nobody holds (π stays a bijection of 1..W, W frozen from
//     the moved counter), after it positions nobody holds; either way the
//     frontier counts them joined and credits them as no-shows after the
//     grace. A safety-net room's counter (admission/enter.lua) keeps the
//     same fence (internal/luascript's seqfence.lua), reported by its
//     node's admission.Frontier. Nothing is sold twice: stock has its own
//     fence and rebuild (package claim).
//   - A frozen window size W whose write was lost is frozen again by the
//     first join, shard read or frontier step on the promoted primary,
//     from its own counter, fenced first.
//   - The frontier (package admission, admission/advance.lua) lives in
//     Redis too and may stand a few steps lower on the replica. It goes on
//     from there at the configured rate; one step credits at most
//     admission.DefaultMaxCredit of time, so it never jumps to make up for
//     the failover, and admission tokens already issued stay valid (they
//     are verified offline, package tokens).
//
// docs/operate.md ("What a Redis failover does") is the operator's side of
// the same story.
package queue
