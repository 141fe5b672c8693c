package client

import (
	"encoding/json"
	"time"
)

// State is a place's state in a join or status answer.
type State string

// The states of docs/api.md.
const (
	StatePrequeue    State = "prequeue"     // the queue is open, the sale not yet
	StateWaiting     State = "waiting"      // in the queue
	StateAdmitted    State = "admitted"     // the turn came: the answer carries an admission token
	StateSoldOut     State = "sold_out"     // nothing left
	StateNotSelected State = "not_selected" // lost the lottery
	StatePaused      State = "paused"       // the sale is paused; the place is kept
	StateClosed      State = "closed"       // the sale ended, or staff closed the room (ClosedByStaff: the place is kept)
)

// state interns a state's text: the known ones without an allocation.
func state(raw []byte) State {
	switch string(raw) {
	case "prequeue":
		return StatePrequeue
	case "waiting":
		return StateWaiting
	case "admitted":
		return StateAdmitted
	case "sold_out":
		return StateSoldOut
	case "not_selected":
		return StateNotSelected
	case "paused":
		return StatePaused
	case "closed":
		return StateClosed
	}
	return State(raw)
}

// stateOf reads a state value; the known states cost no allocation.
func stateOf(val []byte, k kind, esc bool) (State, error) {
	if k == kString && !esc {
		return state(val), nil
	}
	v, err := str(val, k, esc)
	return State(v), err
}

// Ticket is a join's answer: the queue ticket and the place it holds.
type Ticket struct {
	// Ticket is the signed queue ticket; the status poll presents it as
	// the bearer. The same for a repeated join of one user.
	Ticket string
	// Seq is the join's number (within the user's join shard).
	Seq int64
	// Position is the place in the admission order; 0 until it is known
	// (a shuffle window or a lottery draws it later).
	Position int64
	// State is the place's state.
	State State
	// PollAfter is how long to wait before the first status poll.
	PollAfter time.Duration
	// Lane names the caller's lane; "" for the default one.
	Lane string
	// AdmissionToken is set when the join admitted at once (a safety-net
	// room under its thresholds, a bypass pass).
	AdmissionToken string
	// AdmissionExpiresAt is when AdmissionToken expires.
	AdmissionExpiresAt time.Time
}

// Status is a status poll's answer.
type Status struct {
	State State
	// Position is the place in the admission order; 0 until it is known.
	Position int64
	// Ahead is how many people are before the caller.
	Ahead int64
	// ETA is the estimated wait.
	ETA time.Duration
	// PollAfter is the server's pace: poll again not sooner than this.
	PollAfter time.Duration
	// ClosedByStaff reports state closed because staff closed the room:
	// the place is kept, keep polling.
	ClosedByStaff bool
	// AdmissionToken is set once admitted: present it as the claim's
	// bearer.
	AdmissionToken string
	// AdmissionExpiresAt is when AdmissionToken expires.
	AdmissionExpiresAt time.Time
}

// Final reports whether the state will not change by polling again:
// admitted, sold out, not selected, or the sale ended (closed, not by
// staff).
func (s Status) Final() bool {
	switch s.State {
	case StateAdmitted, StateSoldOut, StateNotSelected:
		return true
	case StateClosed:
		return !s.ClosedByStaff
	}
	return false
}

// Claim is a claim, as a claim, release or claims answer gives it.
type Claim struct {
	// ID is the claim's id.
	ID string
	// Status is pending, confirmed or released.
	Status string
	// Created is true when this call made the claim (201); false when it
	// answered one an earlier call with the same Idempotency-Key made
	// (200). Only Client.Claim sets it.
	Created bool
	// IdempotencyKey is the key the claim was sent under; only
	// Client.Claim sets it.
	IdempotencyKey string
	// Event, Position and ClaimedAt are set by the claims and release
	// answers.
	Event     string
	Position  int64
	ClaimedAt time.Time
}

// ParseJoin decodes a join answer's body (200). It allocates only the
// strings it returns.
func ParseJoin(body []byte) (Ticket, error) {
	var t Ticket
	err := members(body, func(key, val []byte, k kind, esc bool) error {
		var err error
		switch string(key) {
		case "ticket":
			t.Ticket, err = str(val, k, esc)
		case "seq":
			t.Seq, err = num(val, k)
		case "position":
			t.Position, err = num(val, k)
		case "state":
			t.State, err = stateOf(val, k, esc)
		case "poll_after_ms":
			var ms int64
			ms, err = num(val, k)
			t.PollAfter = time.Duration(ms) * time.Millisecond
		case "lane":
			t.Lane, err = str(val, k, esc)
		case "admission_token":
			t.AdmissionToken, err = str(val, k, esc)
		case "admission_expires_at":
			t.AdmissionExpiresAt, err = instant(val, k, esc)
		}
		return err
	})
	if err != nil {
		return Ticket{}, err
	}
	return t, nil
}

// ParseStatus decodes a status answer's body (200). A waiting answer costs
// no allocation; an admitted one allocates its token.
func ParseStatus(body []byte) (Status, error) {
	var s Status
	err := members(body, func(key, val []byte, k kind, esc bool) error {
		var err error
		switch string(key) {
		case "state":
			s.State, err = stateOf(val, k, esc)
		case "position":
			s.Position, err = num(val, k)
		case "ahead":
			s.Ahead, err = num(val, k)
		case "eta_seconds":
			var sec int64
			sec, err = num(val, k)
			s.ETA = time.Duration(sec) * time.Second
		case "poll_after_ms":
			var ms int64
			ms, err = num(val, k)
			s.PollAfter = time.Duration(ms) * time.Millisecond
		case "closed_by":
			if k == kString && !esc {
				s.ClosedByStaff = string(val) == "staff" // no allocation
				break
			}
			var by string
			by, err = str(val, k, esc)
			s.ClosedByStaff = by == "staff"
		case "admission_token":
			s.AdmissionToken, err = str(val, k, esc)
		case "admission_expires_at":
			s.AdmissionExpiresAt, err = instant(val, k, esc)
		}
		return err
	})
	if err != nil {
		return Status{}, err
	}
	return s, nil
}

// ParseClaim decodes a claim's body: a claim answer ({claim_id, status}),
// a release answer or one record of the claims list.
func ParseClaim(body []byte) (Claim, error) {
	var c Claim
	err := members(body, func(key, val []byte, k kind, esc bool) error {
		var err error
		switch string(key) {
		case "claim_id":
			c.ID, err = str(val, k, esc)
		case "status":
			c.Status, err = str(val, k, esc)
		case "event":
			c.Event, err = str(val, k, esc)
		case "position":
			c.Position, err = num(val, k)
		case "claimed_at":
			c.ClaimedAt, err = instant(val, k, esc)
		}
		return err
	})
	if err != nil {
		return Claim{}, err
	}
	return c, nil
}

// ParseClaims decodes the claims list's body ({"claims": [...]}).
func ParseClaims(body []byte) ([]Claim, error) {
	var list struct {
		Claims []json.RawMessage `json:"claims"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, errSyntax
	}
	out := make([]Claim, 0, len(list.Claims))
	for _, raw := range list.Claims {
		c, err := ParseClaim(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// ParseProblem decodes a refusal: status, the problem+json body (or any
// other body, then Code is "") and the Retry-After header's value (""
// without one), read at now (an HTTP-date counts from now). op names the
// call for the message.
func ParseProblem(op string, status int, body []byte, retryAfter string, now time.Time) *Error {
	e := &Error{Op: op, Status: status, Attempts: 1}
	e.RetryAfter, _ = ParseRetryAfter(retryAfter, now)
	_ = members(body, func(key, val []byte, k kind, esc bool) error {
		switch string(key) {
		case "code":
			s, _ := str(val, k, esc)
			e.Code = Code(s)
		case "title":
			e.Title, _ = str(val, k, esc)
		case "detail":
			e.Detail, _ = str(val, k, esc)
		case "request_id":
			e.RequestID, _ = str(val, k, esc)
		case "claim_ids":
			if k == kNested {
				_ = json.Unmarshal(val, &e.ClaimIDs)
			}
		}
		return nil
	})
	return e
}

// members calls f with each member of the JSON object body.
func members(body []byte, f func(key, val []byte, k kind, esc bool) error) error {
	sc := scanner{b: body}
	if err := sc.open(); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, val, k, esc, done, err := sc.member(first)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if err := f(key, val, k, esc); err != nil {
			return err
		}
	}
}

// str reads a string value; null is "".
func str(val []byte, k kind, esc bool) (string, error) {
	switch k {
	case kString:
		return text(val, esc)
	case kNull:
		return "", nil
	}
	return "", errSyntax
}

// num reads an integer value; null is 0.
func num(val []byte, k kind) (int64, error) {
	switch k {
	case kNumber:
		return integer(val)
	case kNull:
		return 0, nil
	}
	return 0, errSyntax
}

// instant reads an RFC 3339 time; null is the zero time.
func instant(val []byte, k kind, esc bool) (time.Time, error) {
	s, err := str(val, k, esc)
	if err != nil || s == "" {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, errSyntax
	}
	return t, nil
}
