// Package staff owns the people who run sales and what they do, kept in
// Redis so that every node agrees on it:
//
//   - accounts and their roles (viewer < operator < admin; the last admin
//     can be neither removed nor demoted), with argon2id password hashes;
//   - API keys of accounts ("ak_<prefix>_<secret>", only a SHA-256 kept);
//   - each account's incarnation (gen): set when it is created and
//     replaced when its password or role changes; console sessions and
//     API keys are bound to it, so they end with a delete (even if the
//     name is created again), a password change or a role change;
//   - console sessions: a sign-out, or "sign everyone out", on one node
//     holds on all of them;
//   - one-time sign-in links (the demo's only): spent by their first use
//     on any node, gone at their expiry;
//   - the sign-in throttle: failed admin authentications counted per
//     client address, so a guesser meets 429 on every node, not a fresh
//     budget per node;
//   - the audit trail: an append-only stream of staff actions, ordered by
//     Redis TIME across nodes.
//
// Keys (all under the hash tag {staff}, so scripts never cross slots on a
// Redis Cluster):
//
//	ar:{staff}:accounts            set of account names
//	ar:{staff}:admins              set of admin names
//	ar:{staff}:account:<name>      hash: role, password, keys, gen (incarnation)
//	ar:{staff}:apikey:<prefix>     hash: account, sha256, gen
//	ar:{staff}:sessions            sorted set: session id → expiry (unix ms)
//	ar:{staff}:signin:<sha256>     a one-time sign-in link (the demo's): "expiry-ms gen name", PX too
//	ar:{staff}:fail:<addr>         failed attempts of one address in its window
//	ar:{staff}:audit               stream: the audit trail
//	ar:{staff}:audit:once:<marker> set while a once-only entry is recorded
//	ar:{staff}:audit:cap:<class>   entries of a capped class in its window
//
// The web package reaches these through small interfaces of its own; it
// never sees a key name. Every type here is safe for concurrent use.
package staff
