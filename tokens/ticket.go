package tokens

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// MinSecretLen is the shortest HMAC secret [NewTickets] and [NewVisitors]
// accept, in bytes.
const MinSecretLen = 32

// ticketHeader is base64url({"alg":"HS256","typ":"JWT"}), the one JOSE
// header a ticket may have: pinning the header bytes pins the algorithm.
const ticketHeader = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"

// Ticket is what a queue ticket says: user User joined event Event and was
// given sequence number Seq (1, 2, 3, ... per event) at IssuedAt.
//
// IssuedAt is carried in whole seconds; a verified Ticket has it in UTC.
type Ticket struct {
	Event    string
	User     string
	Seq      int64
	IssuedAt time.Time
	// Sunk marks a ticket of the door's endless queue (package door's
	// Sink): it is signed with a key of its own, derived from the secret,
	// so it reads like any ticket to whoever lacks the secret, and it is
	// never admitted. It is not a claim of the payload.
	Sunk bool
}

// ticketClaims is the JSON payload of a ticket. Pointers tell a missing
// claim from a zero one.
type ticketClaims struct {
	Event string `json:"ev"`
	User  string `json:"sub"`
	Seq   *int64 `json:"seq"`
	Iat   *int64 `json:"iat"`
}

// Tickets signs and verifies queue tickets: compact JWTs (RFC 7519) with
// header {"alg":"HS256","typ":"JWT"}, one server secret shared by all nodes,
// claims ev, sub, seq and iat. Any JWT library holding the secret can read
// them.
//
// Signing is deterministic: the same Ticket always yields the same string,
// so a repeated join can answer with the very same ticket. Tickets carry no
// expiry. Verification is on the hottest path (every status poll), so it is
// done here without a general JWT parser: the header must be exactly the
// one above (which pins HS256 and rules out "none" or key confusion), the
// HMAC is checked before the payload is decoded, and every base64url segment
// must be canonical.
//
// A *Tickets is safe for concurrent use. The zero value is not usable; call
// [NewTickets].
type Tickets struct {
	macs sync.Pool // of hash.Hash: HMAC-SHA256 keyed with the secret
	// sinks signs sunk tickets (Ticket.Sunk): HMAC-SHA256 keyed with
	// HMAC-SHA256(secret, sinkLabel).
	sinks sync.Pool
}

// sinkLabel derives the key of sunk tickets from the secret.
const sinkLabel = "anteroom/v1 sunk ticket"

// NewTickets returns a Tickets using secret, which must be at least
// [MinSecretLen] random bytes (see [LoadOrCreateSecret]). The secret is
// copied.
func NewTickets(secret []byte) (*Tickets, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("tokens: ticket secret is %d bytes, want at least %d", len(secret), MinSecretLen)
	}
	key := bytes.Clone(secret)
	t := &Tickets{}
	t.macs.New = func() any { return hmac.New(sha256.New, key) }
	sinkKey := t.mac(sinkLabel)
	t.sinks.New = func() any { return hmac.New(sha256.New, sinkKey) }
	return t, nil
}

// mac returns HMAC-SHA256(secret, input).
func (t *Tickets) mac(input string) []byte {
	return t.appendMAC(nil, []byte(input))
}

// appendMAC appends HMAC-SHA256(secret, input) to b.
func (t *Tickets) appendMAC(b, input []byte) []byte { return appendMACOf(&t.macs, b, input) }

// appendMACOf appends the MAC of pool's key over input to b.
func appendMACOf(pool *sync.Pool, b, input []byte) []byte {
	h := pool.Get().(hash.Hash)
	h.Reset()
	h.Write(input)
	b = h.Sum(b)
	pool.Put(h)
	return b
}

// Sign returns the ticket string for tk. IssuedAt is truncated to whole
// seconds. It fails if Event or User is empty, longer than 256 bytes or not
// valid UTF-8, or if Seq < 1.
func (t *Tickets) Sign(tk Ticket) (string, error) {
	if err := checkID("event", tk.Event); err != nil {
		return "", err
	}
	if err := checkID("user", tk.User); err != nil {
		return "", err
	}
	if tk.Seq < 1 {
		return "", fmt.Errorf("tokens: ticket seq %d, want >= 1", tk.Seq)
	}
	// Join signs one ticket per request: the payload is encoded by hand
	// (the same bytes encoding/json writes, see appendTicketClaims) and
	// the token is built in one buffer.
	var pbuf [2*maxIDLen + 64]byte
	payload := appendTicketClaims(pbuf[:0], tk.Event, tk.User, tk.Seq, tk.IssuedAt.Unix())
	enc := base64.RawURLEncoding
	out := make([]byte, 0, len(ticketHeader)+2+enc.EncodedLen(len(payload))+enc.EncodedLen(sha256.Size))
	out = append(out, ticketHeader...)
	out = append(out, '.')
	out = enc.AppendEncode(out, payload)
	var sum [sha256.Size]byte
	pool := &t.macs
	if tk.Sunk {
		pool = &t.sinks
	}
	mac := appendMACOf(pool, sum[:0], out)
	out = append(out, '.')
	out = enc.AppendEncode(out, mac)
	return string(out), nil
}

// Verify checks raw and returns the ticket it carries. It returns an error
// wrapping [ErrInvalid] for anything malformed, forged or incomplete, and
// one wrapping [ErrWrongEvent] for a genuine ticket of another event than
// event.
func (t *Tickets) Verify(raw, event string) (Ticket, error) {
	if len(raw) > maxTokenLen {
		return Ticket{}, invalid(fmt.Sprintf("ticket longer than %d bytes", maxTokenLen))
	}
	header, rest, ok := strings.Cut(raw, ".")
	if !ok || header != ticketHeader {
		return Ticket{}, invalid("ticket header is not the HS256 ticket header")
	}
	payload64, sig64, ok := strings.Cut(rest, ".")
	if !ok {
		return Ticket{}, invalid("ticket is not three segments")
	}
	sig, err := unb64(sig64)
	if err != nil {
		return Ticket{}, invalid("ticket signature mismatch")
	}
	signed := raw[:len(raw)-len(sig64)-1]
	sunk := false
	if !hmac.Equal(sig, t.mac(signed)) {
		// A sunk ticket, or a forgery: the second key tells.
		var sum [sha256.Size]byte
		if sunk = hmac.Equal(sig, appendMACOf(&t.sinks, sum[:0], []byte(signed))); !sunk {
			return Ticket{}, invalid("ticket signature mismatch")
		}
	}
	payload, err := unb64(payload64)
	if err != nil {
		return Ticket{}, invalid("ticket payload is not base64url")
	}
	var c ticketClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return Ticket{}, invalid(err)
	}
	switch {
	case c.Event == "":
		return Ticket{}, invalid("ticket without ev")
	case c.User == "":
		return Ticket{}, invalid("ticket without sub")
	case c.Seq == nil || *c.Seq < 1:
		return Ticket{}, invalid("ticket without a positive seq")
	case c.Iat == nil:
		return Ticket{}, invalid("ticket without iat")
	}
	if c.Event != event {
		return Ticket{}, fmt.Errorf("%w: ticket for event %q", ErrWrongEvent, c.Event)
	}
	return Ticket{Event: c.Event, User: c.User, Seq: *c.Seq, IssuedAt: time.Unix(*c.Iat, 0).UTC(), Sunk: sunk}, nil
}

// String redacts the secret.
func (t *Tickets) String() string { return "tokens.Tickets{secret: redacted}" }

// LogValue redacts the secret.
func (t *Tickets) LogValue() slog.Value { return slog.StringValue(t.String()) }
