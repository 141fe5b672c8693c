// Package staff keeps the state of staff sign-in in Redis, so that every
// node agrees on it: console sessions (a sign-out or a "sign everyone out"
// on one node holds on all of them) and the count of failed admin
// authentications per client address (a guesser meets 429 on every node,
// not a fresh budget per node).
//
// Keys (all under the hash tag {staff}, so scripts never cross slots on a
// Redis Cluster):
//
//	ar:{staff}:sessions      sorted set: session id → expiry (unix ms)
//	ar:{staff}:fail:<addr>   failed attempts of one address in its window
//
// The web package reaches these through small interfaces of its own; it
// never sees a key name.
package staff
