// Package turnstile owns an admission's life: how one is minted (Admit),
// how it is spent (Authorize, then Spent), and what each step records in
// the node's view of the sale. Every handler that mints or verifies an
// admission token calls it (package web/shopper: status, join with a pass,
// a safety-net room's join and gate, the gate's check, claim); none signs
// or checks one itself.
//
// # What an admission is
//
// An admission is a signed admission token (tokens.Issuer: EdDSA or ES256,
// iss, aud, sub = the user, event, pos, jti, exp). There are three ways to
// get one, the three kinds of Admit, and they differ on purpose (see
// Kind):
//
//   - Queue: the frontier passed the holder's position (the status poll).
//   - Room: a safety-net room let the visitor in (its join, its gate, or
//     the gate renewing an admission past half its life).
//   - Pass: a bypass pass was redeemed on join.
//
// None is minted while staff have the room closed (event.Config.CheckOpen,
// which every way in asks first).
//
// # Who may claim
//
// The answer is this package together with the edge in front of it and
// the claim script behind it, checked in this order:
//
//  1. The edge (packages web/kit and web/protect): the node is under its
//     in-flight cap (protect.Edge.EntryCap, 503); the sale exists in the
//     node's view (kit.LoadSale, 404) and its pre-queue has opened
//     (protect.Edge.EarlyBird: 403 not_open, no Redis).
//  2. Authorize (this package): the sale sells (a safety-net room does
//     not: 403); the request carries a bearer admission token (401) whose
//     signature verifies against the JWKS with pinned algorithms, issuer,
//     audience, expiry and not-before (401), issued for this sale (403);
//     the caller named by the node's identity mode is the token's subject
//     (no identity 401, another user 403); staff have not closed the room
//     (503 closed) and the sale is not paused (503 paused); either way the
//     admission stays valid.
//  3. The edge limits (protect.Edge.Claim, after Authorize): the claim
//     rate limits per IP, device, user, event and the deployment (429),
//     and where the sale asks for it one claim per device and per payment
//     method (409).
//  4. claim.lua (package claim), atomically in Redis: the idempotency key
//     (or the token's jti) answers a replay with the same claim; the
//     per-user limit (409 with the claims held); the stock of the user's
//     home bucket, then the others (410 once sold out); a bucket whose
//     stock is being rebuilt or is stale after a failover refuses (503).
//
// A token may be presented until it expires: the idempotency key and the
// per-user limit make replays safe, so nothing here remembers a spent
// token. Spent tells the node's view that the admission was used, so that
// max_active counts the holder by their pending claim instead.
//
// The package reads no clock (every call takes now) and calls Redis only
// through its View, once: Admit under max_active counts the admission
// (View.Activate) before the token goes out. It is safe for concurrent
// use when its dependencies are.
package turnstile
