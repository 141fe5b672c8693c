package tokens

import (
	"encoding/json"
	"strconv"
)

// appendTicketClaims appends the JSON payload of a ticket to b: exactly
// the bytes json.Marshal writes for ticketClaims{ev, sub, &seq, &iat}, so
// tickets signed before and after are the same strings. ev and sub are
// valid UTF-8 (checkID).
func appendTicketClaims(b []byte, ev, sub string, seq, iat int64) []byte {
	b = append(b, `{"ev":`...)
	b = appendJSONString(b, ev)
	b = append(b, `,"sub":`...)
	b = appendJSONString(b, sub)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"iat":`...)
	b = strconv.AppendInt(b, iat, 10)
	return append(b, '}')
}

// appendJSONString appends s as a JSON string the way encoding/json does.
// Printable ASCII without '"', '\\' and the HTML characters that
// encoding/json escapes is copied as is; anything else (rare in ids) is
// left to encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
