package tokens

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// MinSecretLen is the shortest HMAC secret [NewTickets] and [NewVisitors]
// accept, in bytes.
const MinSecretLen = 32

// Ticket is what a queue ticket says: user User joined event Event and was
// given sequence number Seq (1, 2, 3, ... per event) at IssuedAt.
//
// IssuedAt is carried in whole seconds; a verified Ticket has it in UTC.
type Ticket struct {
	Event    string
	User     string
	Seq      int64
	IssuedAt time.Time
}

// ticketClaims is the JSON payload of a ticket. Pointers tell a missing
// claim from a zero one. Claim validation is done by Tickets.Verify itself
// (a ticket has no exp), so the jwt.Claims methods report nothing.
type ticketClaims struct {
	Event string `json:"ev"`
	User  string `json:"sub"`
	Seq   *int64 `json:"seq"`
	Iat   *int64 `json:"iat"`
}

func (ticketClaims) GetExpirationTime() (*jwt.NumericDate, error) { return nil, nil }
func (ticketClaims) GetIssuedAt() (*jwt.NumericDate, error)       { return nil, nil }
func (ticketClaims) GetNotBefore() (*jwt.NumericDate, error)      { return nil, nil }
func (ticketClaims) GetIssuer() (string, error)                   { return "", nil }
func (ticketClaims) GetSubject() (string, error)                  { return "", nil }
func (ticketClaims) GetAudience() (jwt.ClaimStrings, error)       { return nil, nil }

// Tickets signs and verifies queue tickets: compact JWTs, HS256 with one
// server secret shared by all nodes, claims ev, sub, seq and iat.
//
// Signing is deterministic: the same Ticket always yields the same string,
// so a repeated join can answer with the very same ticket. Tickets carry no
// expiry. Verification costs one HMAC and no I/O.
//
// A *Tickets is safe for concurrent use. The zero value is not usable; call
// [NewTickets].
type Tickets struct {
	secret []byte
	parser *jwt.Parser
}

// NewTickets returns a Tickets using secret, which must be at least
// [MinSecretLen] random bytes (see [LoadOrCreateSecret]). The secret is
// copied.
func NewTickets(secret []byte) (*Tickets, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("tokens: ticket secret is %d bytes, want at least %d", len(secret), MinSecretLen)
	}
	return &Tickets{
		secret: append([]byte(nil), secret...),
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithStrictDecoding(),
			jwt.WithoutClaimsValidation(), // no exp on tickets; checked below
		),
	}, nil
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
	seq, iat := tk.Seq, tk.IssuedAt.Unix()
	c := ticketClaims{Event: tk.Event, User: tk.User, Seq: &seq, Iat: &iat}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.secret)
	if err != nil {
		return "", fmt.Errorf("tokens: sign ticket: %w", err)
	}
	return s, nil
}

// Verify checks raw and returns the ticket it carries. Only HS256 with this
// secret is accepted. It returns an error wrapping [ErrInvalid] for anything
// malformed, forged or incomplete, and one wrapping [ErrWrongEvent] for a
// genuine ticket of another event than event.
func (t *Tickets) Verify(raw, event string) (Ticket, error) {
	if len(raw) > maxTokenLen {
		return Ticket{}, invalid(fmt.Sprintf("ticket longer than %d bytes", maxTokenLen))
	}
	var c ticketClaims
	_, err := t.parser.ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) {
		return t.secret, nil
	})
	if err != nil {
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
	return Ticket{Event: c.Event, User: c.User, Seq: *c.Seq, IssuedAt: time.Unix(*c.Iat, 0).UTC()}, nil
}

// String redacts the secret.
func (t *Tickets) String() string { return "tokens.Tickets{secret: redacted}" }

// LogValue redacts the secret.
func (t *Tickets) LogValue() slog.Value { return slog.StringValue(t.String()) }
