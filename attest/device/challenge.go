package device

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"
)

// A challenge is 40 bytes in base64url (54 characters, unpadded): the
// instant it was issued (unix ms, 8 bytes big-endian), 16 random bytes and
// the first 16 bytes of HMAC-SHA256 under the node's challenge key over
// the sale's id and those 24 bytes. Issuing one writes nothing: any node
// holding the same secret recognises it, for Config.ChallengeTTL. Using
// one writes its spent marker (register.lua, assert.lua, checkGoogle),
// which lives until the challenge could no longer be used.
const (
	challengeBytes = 40
	challengeLen   = 54
	// challengeSkew is how far in the future (another node's clock) a
	// challenge's instant may be.
	challengeSkew = 5 * time.Second
)

// challengeKeyOf derives the key of challenges from the node's secret.
func challengeKeyOf(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("anteroom attest challenge key"))
	return m.Sum(nil)
}

// Challenge returns a one-time challenge for sale ev issued at now, good
// for Config.ChallengeTTL. It writes nothing.
func (s *Service) Challenge(ev string, now time.Time) string {
	var b [challengeBytes]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli()))
	rand.Read(b[8:24])
	copy(b[24:], s.challengeMAC(ev, b[:24]))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (s *Service) challengeMAC(ev string, body []byte) []byte {
	m := hmac.New(sha256.New, s.challengeKey)
	m.Write([]byte(ev))
	m.Write([]byte{0})
	m.Write(body)
	return m.Sum(nil)[:16]
}

// openChallenge checks that ch is a challenge this service issued for
// sale ev, still good at now, and returns how long its spent marker must
// live (until the challenge's validity ends, plus the skew). A challenge
// of the wrong shape is ErrMalformed; a forged, foreign or expired one
// ErrChallenge.
func (s *Service) openChallenge(ev, ch string, now time.Time) (time.Duration, error) {
	if len(ch) != challengeLen {
		return 0, fmt.Errorf("%w: a challenge is %d base64url characters", ErrMalformed, challengeLen)
	}
	b, err := base64.RawURLEncoding.DecodeString(ch)
	if err != nil || len(b) != challengeBytes {
		return 0, fmt.Errorf("%w: a challenge is %d base64url characters", ErrMalformed, challengeLen)
	}
	if !hmac.Equal(b[24:], s.challengeMAC(ev, b[:24])) {
		return 0, fmt.Errorf("%w: not issued by this service for this sale", ErrChallenge)
	}
	issued := time.UnixMilli(int64(binary.BigEndian.Uint64(b[:8])))
	end := issued.Add(s.cfg.ChallengeTTL)
	switch {
	case now.After(end):
		return 0, fmt.Errorf("%w: expired", ErrChallenge)
	case issued.After(now.Add(challengeSkew)):
		return 0, fmt.Errorf("%w: issued in the future", ErrChallenge)
	}
	return end.Sub(now) + challengeSkew, nil
}
