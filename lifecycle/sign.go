package lifecycle

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Headers a webhook request carries.
const (
	// SignatureHeader is "t=<unix seconds>,v1=<hex HMAC-SHA256 of
	// "<t>.<body>" keyed by the webhook's secret>".
	SignatureHeader = "X-Anteroom-Signature"
	// EventIDHeader is the event id, the same on every attempt: dedupe on
	// it.
	EventIDHeader = "X-Anteroom-Event-Id"
	// EventTypeHeader is the event type.
	EventTypeHeader = "X-Anteroom-Event-Type"
)

// Sign returns the SignatureHeader value for body at t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return m.Sum(nil)
}

// ErrBadSignature is returned by Verify for a signature that does not
// match or is too old.
var ErrBadSignature = errors.New("lifecycle: bad webhook signature")

// Verify checks a SignatureHeader value against body, as a receiver does:
// the HMAC must match (compared in constant time) and the timestamp be
// within tolerance of now, which refuses replays of old requests.
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts, v1 string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			v1 = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrBadSignature
	}
	got, err := hex.DecodeString(v1)
	if err != nil || !hmac.Equal(got, mac(secret, ts, body)) {
		return ErrBadSignature
	}
	return nil
}
