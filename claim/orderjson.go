package claim

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// Every granted claim turns its order event into JSON (for claim.lua's
// outbox and the stream) and reads the epoch back from claim.lua's copy
// before the fence. encoding/json's reflection did both for every claim;
// the forms written here take a few appends and scans instead, and give
// exactly what encoding/json gives (FuzzOrderEventJSON and FuzzEpochOf
// hold them equal). Anything outside these forms still goes to
// encoding/json.

// marshalOrderEvent returns json.Marshal(e).
func marshalOrderEvent(e *OrderEvent) ([]byte, error) {
	if b, ok := appendOrderEvent(make([]byte, 0, 256), e); ok {
		return b, nil
	}
	return json.Marshal(e)
}

// appendOrderEvent appends e as json.Marshal writes it, when every string
// in it is plain printable ASCII that JSON writes as is and At is a UTC
// time of years 0 to 9999. ok is false otherwise (nothing is to be used).
func appendOrderEvent(b []byte, e *OrderEvent) (_ []byte, ok bool) {
	if !jsonPlain(string(e.Type)) || !jsonPlain(e.Event) || !jsonPlain(e.ClaimID) || !jsonPlain(e.User) ||
		!jsonPlain(e.Idem) || !jsonPlain(string(e.Reason)) || !jsonPlain(e.TraceID) || !jsonPlain(e.Signals) {
		return b, false
	}
	if y := e.At.Year(); y < 0 || y > 9999 || e.At.Location() != time.UTC {
		return b, false
	}
	if y := e.SignalsUntil.Year(); !e.SignalsUntil.IsZero() && (y < 0 || y > 9999 || e.SignalsUntil.Location() != time.UTC) {
		return b, false
	}
	b = append(b, `{"type":"`...)
	b = append(b, e.Type...)
	b = append(b, `","event":"`...)
	b = append(b, e.Event...)
	b = append(b, `","claim_id":"`...)
	b = append(b, e.ClaimID...)
	b = append(b, `","user":"`...)
	b = append(b, e.User...)
	b = append(b, `","pos":`...)
	b = strconv.AppendInt(b, e.Pos, 10)
	b = append(b, `,"units":`...)
	b = strconv.AppendInt(b, e.Units, 10)
	b = append(b, `,"at":"`...)
	b = e.At.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if e.Idem != "" {
		b = append(b, `,"idem":"`...)
		b = append(b, e.Idem...)
		b = append(b, '"')
	}
	if e.Reason != "" {
		b = append(b, `,"reason":"`...)
		b = append(b, e.Reason...)
		b = append(b, '"')
	}
	if e.TraceID != "" {
		b = append(b, `,"trace_id":"`...)
		b = append(b, e.TraceID...)
		b = append(b, '"')
	}
	if e.Signals != "" {
		b = append(b, `,"signals":"`...)
		b = append(b, e.Signals...)
		b = append(b, '"')
	}
	if !e.SignalsUntil.IsZero() {
		b = append(b, `,"signals_until":"`...)
		b = e.SignalsUntil.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if e.Epoch != 0 {
		b = append(b, `,"epoch":`...)
		b = strconv.AppendUint(b, e.Epoch, 10)
	}
	return append(b, '}'), true
}

// jsonPlain reports whether json.Marshal writes s as is between quotes:
// printable ASCII but for " \ < > &.
func jsonPlain(s string) bool {
	for i := range len(s) {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// epochOf reads the epoch an order event's payload carries (0 if none),
// as json.Unmarshal into OrderEvent would: 0 for a payload it refuses (an
// undecodable payload is refused elsewhere).
func epochOf(payload []byte) uint64 {
	// No backslash (no escaped key) and no "epoch" in any letter case:
	// no key can name the field, whatever else the payload holds.
	if bytes.IndexByte(payload, '\\') < 0 && !containsFoldEpoch(payload) {
		return 0
	}
	// claim.lua's form: the object's last member. In a valid document
	// it is a member of the top-level object, and the last one wins.
	if rest, ok := bytes.CutSuffix(payload, []byte("}")); ok {
		if i := bytes.LastIndex(rest, []byte(`,"epoch":`)); i >= 0 {
			digits := rest[i+len(`,"epoch":`):]
			if n, err := strconv.ParseUint(string(digits), 10, 64); err == nil && allDigits(digits) && json.Valid(payload) {
				return n
			}
		}
	}
	var e struct {
		Epoch uint64 `json:"epoch"`
	}
	_ = json.Unmarshal(payload, &e)
	return e.Epoch
}

// containsFoldEpoch reports whether b holds "epoch" in any ASCII letter
// case (no other character folds to one of these letters).
func containsFoldEpoch(b []byte) bool {
	for i := 0; i+5 <= len(b); i++ {
		if b[i]|0x20 == 'e' && b[i+1]|0x20 == 'p' && b[i+2]|0x20 == 'o' && b[i+3]|0x20 == 'c' && b[i+4]|0x20 == 'h' {
			return true
		}
	}
	return false
}

// allDigits reports whether b is a JSON integer without sign: 0, or
// digits not starting with 0.
func allDigits(b []byte) bool {
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
