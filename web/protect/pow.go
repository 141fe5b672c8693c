package protect

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Proof of work on join. An event with limits.pow.enabled (by default a
// lottery on a node with anonymous visitors) asks every joiner to spend
// about a second of CPU first, which costs a person nothing
// and a bot farm a lot. GET /events/{id}/challenge issues a challenge
//
//	"p1." event "." expiry (unix s) "." bits "." random (16 hex) "." base64url(HMAC(key, fields, user))
//
// signed with a key derived from the ticket secret, so any node verifies
// it without state. Join then sends "X-PoW: <challenge>:<nonce>" where the
// first bits bits of sha256(challenge || nonce) are zero. Verifying is one
// HMAC and one sha256: microseconds, no Redis.
//
// A challenge is bound to the caller's user id instead of being remembered
// as spent: a replayed solution is only accepted for the same user, whose
// repeated join returns the same ticket (join is idempotent), so a replay
// gains nothing, and no node needs a replay set that other nodes would not
// share. A solution buys one identity one ticket, never more.

// PoWHeader carries a solved challenge on join.
const PoWHeader = "X-PoW"

//go:embed assets/pow.js
var powJS []byte

type powKey []byte

// newPoWKey derives the challenge key from the edge secret, with a label
// of its own (invites derive theirs with another, in tokens.NewInvites).
func newPoWKey(secret []byte) powKey {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("anteroom pow v1"))
	return m.Sum(nil)
}

func (k powKey) mac(ev, exp, nbits, nonce, user string) string {
	m := hmac.New(sha256.New, k)
	for _, p := range []string{"p1", ev, exp, nbits, nonce, user} {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// issue returns a challenge of nbits for user in ev, valid until exp.
func (k powKey) issue(ev, user string, nbits int, exp time.Time) string {
	var r [8]byte
	_, _ = rand.Read(r[:])
	e, b, n := strconv.FormatInt(exp.Unix(), 10), strconv.Itoa(nbits), hex.EncodeToString(r[:])
	return "p1." + ev + "." + e + "." + b + "." + n + "." + k.mac(ev, e, b, n, user)
}

// verify checks an X-PoW value for user in ev at now against the event's
// current difficulty minBits. It returns the problem to answer, or nil.
func (k powKey) verify(h, ev, user string, minBits int, now time.Time) *kit.Problem {
	if h == "" {
		return powProblem("this sale asks for a proof of work: solve GET /events/" + ev + "/challenge and send " + PoWHeader)
	}
	challenge, nonce, ok := strings.Cut(h, ":")
	f := strings.Split(challenge, ".")
	if !ok || len(h) > 256 || len(f) != 6 || f[0] != "p1" || !validNonce(nonce) {
		return powProblem("malformed " + PoWHeader + ": want <challenge>:<nonce>")
	}
	if !hmac.Equal([]byte(f[5]), []byte(k.mac(f[1], f[2], f[3], f[4], user))) || f[1] != ev {
		return powProblem("the challenge was issued for another event or user")
	}
	exp, err1 := strconv.ParseInt(f[2], 10, 64)
	nbits, err2 := strconv.Atoi(f[3])
	switch {
	case err1 != nil || err2 != nil:
		return powProblem("malformed challenge")
	case !now.Before(time.Unix(exp, 0)):
		return powProblem("the challenge has expired: fetch a new one")
	case nbits < minBits:
		return powProblem("the challenge is easier than this sale now asks: fetch a new one")
	case leadingZeroBits(sha256.Sum256([]byte(challenge+nonce))) < nbits:
		return powProblem("the nonce does not solve the challenge")
	}
	return nil
}

func powProblem(detail string) *kit.Problem {
	p := kit.NewProblem(fiber.StatusForbidden, "pow_required", detail)
	p.Title = "Proof of work required"
	return p
}

func validNonce(n string) bool {
	if len(n) == 0 || len(n) > 32 {
		return false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

func leadingZeroBits(sum [32]byte) int {
	n := 0
	for _, b := range sum {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

// SolvePoW finds a nonce for challenge at nbits of difficulty, as
// assets/pow.js does in the browser: the decimal counter from 0. API
// clients written in Go may use it; it takes 2^nbits hashes on average.
func SolvePoW(challenge string, nbits int) string {
	buf := []byte(challenge)
	for n := uint64(0); ; n++ {
		b := strconv.AppendUint(buf, n, 10)
		if leadingZeroBits(sha256.Sum256(b)) >= nbits {
			return strconv.FormatUint(n, 10)
		}
	}
}

type challengeJSON struct {
	Required  bool       `json:"required"`
	Challenge string     `json:"challenge,omitempty"`
	Bits      int        `json:"bits,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Header    string     `json:"header,omitempty"`
}

// challenge issues a proof-of-work challenge for the caller, or says that
// the event asks none. In anonymous mode it names a new visitor first, so
// the challenge can be bound to them.
func (s *Edge) challenge(c *fiber.Ctx) error {
	cfg := &kit.SaleOf(c).Config
	lim := &cfg.Limits // defaulted when the configuration was read
	c.Set(fiber.HeaderCacheControl, "no-store")
	if !cfg.PoWRequired(s.anonymous) && !door.Challenges(cfg) { // a rule may send a join to a challenge
		return c.JSON(challengeJSON{Required: false})
	}
	user, err := s.deps.Identity.User(c, true)
	if err != nil {
		return err
	}
	exp := s.now().Add(time.Duration(lim.PoW.TTLSeconds) * time.Second).Truncate(time.Second).UTC()
	return c.JSON(challengeJSON{
		Required: true, Challenge: s.pow.issue(cfg.ID, user, lim.PoW.Bits, exp),
		Bits: lim.PoW.Bits, ExpiresAt: &exp, Header: PoWHeader,
	})
}

// powScript serves the browser's solver.
func (s *Edge) powScript(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "text/javascript; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	return c.Send(powJS)
}
