package claim

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Claim records and order events hold integers: positions (a bypass pass
// holder's is 2^50, a lane member's lane × 2^40 + n), millisecond times.
// The scripts write them as decimal text, never through Redis's cjson,
// which keeps 14 significant digits; older nodes' scripts did, so a pass
// holder's position may be stored as 1.1258999068426e+15. The decoders
// below read both forms, so such a record never stops a reader.

// passPosition is the position of a bypass pass holder
// (admission.PassPosition; admission imports this package).
const passPosition int64 = 1 << 50

// passPositionRounded is passPosition as cjson wrote it (%.14g).
var passPositionRounded, _ = strconv.ParseFloat(strconv.FormatFloat(float64(passPosition), 'g', 14, 64), 64)

// jsonInt reads a JSON number as an int64: an integer exactly; another
// form (a fraction or an exponent) as the integer it rounds to. Empty
// (absent or null) is 0.
func jsonInt(n json.Number) (int64, error) {
	if n == "" {
		return 0, nil
	}
	if v, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return v, nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsNaN(f) || math.Abs(f) >= 1<<63 {
		return 0, fmt.Errorf("number %s is not an int64", n)
	}
	return int64(math.Round(f)), nil
}

// jsonPos is jsonInt for a position: the 14 significant digits older nodes
// kept of a pass holder's position (1.1258999068426e+15) read as that
// position again; no queue position comes near it (a lane's are below
// 2^43).
func jsonPos(n json.Number) (int64, error) {
	if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
		if f, err := strconv.ParseFloat(string(n), 64); err == nil && f == passPositionRounded {
			return passPosition, nil
		}
	}
	return jsonInt(n)
}

// UnmarshalJSON decodes a record as encoding/json would, but reads pos and
// at with jsonPos and jsonInt (an older node's cjson form included).
func (r *Record) UnmarshalJSON(b []byte) error {
	type plain Record
	v := struct {
		*plain
		Pos  json.Number `json:"pos"`
		AtMs json.Number `json:"at"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var err, err2 error
	r.Pos, err = jsonPos(v.Pos)
	r.AtMs, err2 = jsonInt(v.AtMs)
	if err == nil {
		err = err2
	}
	if err != nil {
		return fmt.Errorf("claim record: %w", err)
	}
	return nil
}

// UnmarshalJSON decodes an order event as encoding/json would, but reads
// pos with jsonPos (an older node's cjson form included).
func (e *OrderEvent) UnmarshalJSON(b []byte) error {
	type plain OrderEvent
	v := struct {
		*plain
		Pos json.Number `json:"pos"`
	}{plain: (*plain)(e)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var err error
	if e.Pos, err = jsonPos(v.Pos); err != nil {
		return fmt.Errorf("order event: %w", err)
	}
	return nil
}
