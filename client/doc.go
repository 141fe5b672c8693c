// Package client is the Go client of anteroom's public API, for client
// apps and services: join a sale's queue, wait for the turn at the node's
// pace, claim with an idempotency key, list and release claims
// ([Client]); and verify admission tokens offline with the node's JWKS
// ([Verifier]). It is the one owner of the client side's rules — how an
// answer is read, when a call is sent again and how long to wait — and
// anteroom's own load generator and crowd simulators use it.
//
//	c, err := client.New("https://queue.shop.example")
//	t, err := c.Join(ctx, "spring-drop")
//	s, err := c.Wait(ctx, "spring-drop", t.Ticket, nil) // polls at the node's pace
//	if s.State == client.StateAdmitted {
//		cl, err := c.Claim(ctx, "spring-drop", s.AdmissionToken, "")
//		switch {
//		case errors.Is(err, client.ErrSoldOut): ...
//		case errors.Is(err, client.ErrLimitReached): ...
//		}
//	}
//
// # Identity
//
// A Client is one caller, named as the node's ANTEROOM_IDENTITY says
// (docs/configure.md): anonymous (the default here: the visitor cookie the
// first join sets, kept in the Client's cookie jar), header ([WithUser]:
// a user id header, believed only from the shop's trusted gateway) or jwt
// ([WithUserToken]: the shop's signed user token). Queue tickets and
// admission tokens are presented as the Authorization bearer.
//
// # Pace and retries
//
// The node sets the pace; the client never goes faster:
//
//   - [Client.Wait] polls the status no sooner than the answer's
//     poll_after_ms ([PollDelay] adds up to a tenth at random, never
//     less).
//   - 429 and 503 are sent again after their Retry-After plus up to a
//     fifth at random ([Retry.Jitter]), never sooner; when the node asks
//     for longer than [Retry.MaxWait] the call ends with its [*Error] at
//     once, for the caller to decide.
//   - When no answer came (a refused or cut connection, a timeout, a 502
//     or 504 of a proxy) a call is sent again only if that cannot do
//     anything twice: status polls and the claims list (GETs), releases
//     (releasing a released claim answers the same), claims (the same
//     Idempotency-Key goes with every retry, so the node makes at most
//     one claim however often it is sent) and joins of a caller the node
//     already knows (a repeated join of one user returns the same
//     ticket; a first anonymous join is not retried, as its retry would
//     be a second visitor with a second place).
//   - Any other 4xx or 5xx is final: not sent again.
//   - At most [Retry.Attempts] sendings of one call, each wait honouring
//     the context.
//
// # Errors
//
// A refusal is an [*Error]: the HTTP status, the problem+json code, title
// and detail, the request id and the Retry-After. Branch on codes with
// errors.Is and the [Code] constants (ErrSoldOut, ErrLimitReached,
// ErrRateLimited, ErrPaused, ErrClosed, …). When no answer came the
// transport's error is returned, wrapped.
//
// # Without net/http
//
// The decoders ([ParseJoin], [ParseStatus], [ParseClaim],
// [ParseProblem], [ParseRetryAfter]) read bodies and headers from any
// HTTP client, allocating only the strings they return (a waiting status
// answer: nothing), and [Retry.Next] and [PollDelay] are the retry and
// pace rules as plain functions: a fasthttp loop follows the same rules.
//
// # Verifying admission tokens
//
// A service behind the waiting room checks the admission token a caller
// presents with a [Verifier]: offline, against the node's
// /.well-known/jwks.json, cached and fetched again when a token names a
// new key (a rotation), rate-limited. It accepts exactly what the node
// accepts (the tokens package's checks: EdDSA only, iss, aud, event, exp
// and nbf with leeway) and fails closed: without keys no token passes.
//
// A Client and a Verifier are safe for concurrent use.
package client
