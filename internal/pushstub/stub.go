// Package pushstub is a Web Push service and a browser's subscription keys
// for tests: the browsers' push services are not reachable from a test, so
// the node sends to this stub on loopback. The stub checks each request as
// a push service and a browser would, independently of the sender's code:
// the VAPID Authorization (RFC 8292: an ES256 JWT whose aud is the
// endpoint's origin, with a sub and an exp at most 24 hours ahead, signed
// by the key in k=, which must be the node's), and the aes128gcm body (RFC
// 8291), decrypted with the subscription's private key and auth secret.
package pushstub

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Message is one push request the stub received.
type Message struct {
	// Plaintext is the decrypted payload (nil when Err is set).
	Plaintext []byte
	// Subject is the VAPID JWT's sub; TTL and Urgency the headers.
	Subject, TTL, Urgency string
	// Err says why the request was refused (answered 400 or 401).
	Err error
	// At is when the request arrived.
	At time.Time
	// Status is what the stub answered.
	Status int
}

// Stub is a push service on loopback for one browser's subscription.
type Stub struct {
	srv   *httptest.Server
	priv  *ecdh.PrivateKey
	auth  []byte
	vapid string // the sender's VAPID public key, base64url, "" to take any

	mu     sync.Mutex
	msgs   []Message
	status int
	fail   int // answer failStatus to this many more valid requests
	failAs int
	hold   bool       // keep valid requests waiting for Release
	held   []chan int // the waiting requests, oldest first: each gets its answer
}

// Start starts a stub over plain http (the node allows it by name) whose
// browser keys are fresh; vapid is the VAPID public key the sender must
// sign with ("" accepts any valid signature). Close it when done.
func Start(vapid string) (*Stub, error) {
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	s := &Stub{priv: priv, auth: make([]byte, 16), vapid: vapid, status: http.StatusCreated}
	if _, err := rand.Read(s.auth); err != nil {
		return nil, err
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s, nil
}

// Close stops the stub.
func (s *Stub) Close() { s.srv.Close() }

// Endpoint is the subscription's endpoint URL.
func (s *Stub) Endpoint() string { return s.srv.URL + "/push/sub-1" }

// Subscription returns the browser's PushSubscription as JSON, as the
// page posts it.
func (s *Stub) Subscription() map[string]any {
	return map[string]any{"endpoint": s.Endpoint(), "keys": map[string]string{
		"p256dh": base64.RawURLEncoding.EncodeToString(s.priv.PublicKey().Bytes()),
		"auth":   base64.RawURLEncoding.EncodeToString(s.auth),
	}}
}

// AnswerWith makes the stub answer status to the next requests (201 by
// default; 410 says the subscription is gone).
func (s *Stub) AnswerWith(status int) {
	s.mu.Lock()
	s.status = status
	s.mu.Unlock()
}

// FailFirst makes the stub answer status to the next n valid requests,
// then its usual answer: a push service having trouble.
func (s *Stub) FailFirst(n, status int) {
	s.mu.Lock()
	s.fail, s.failAs = n, status
	s.mu.Unlock()
}

// Hold makes the stub keep each next valid request waiting, unanswered,
// until Release answers it: a slow push service.
func (s *Stub) Hold() {
	s.mu.Lock()
	s.hold = true
	s.mu.Unlock()
}

// Held reports how many requests are waiting for Release.
func (s *Stub) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

// Release answers the oldest waiting request with status and reports
// whether one was waiting.
func (s *Stub) Release(status int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.held) == 0 {
		return false
	}
	s.held[0] <- status
	s.held = s.held[1:]
	return true
}

// Messages returns what the stub received so far.
func (s *Stub) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

func (s *Stub) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8192))
	m := Message{TTL: r.Header.Get("TTL"), Urgency: r.Header.Get("Urgency"), At: time.Now()}
	sub, err := s.checkVAPID(r.Header.Get("Authorization"))
	m.Subject = sub
	status := http.StatusUnauthorized
	if err == nil {
		status = http.StatusBadRequest
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/push/sub-1":
			err = fmt.Errorf("%s %s: not the subscription's endpoint", r.Method, r.URL.Path)
		case r.Header.Get("Content-Encoding") != "aes128gcm":
			err = fmt.Errorf("Content-Encoding %q, want aes128gcm", r.Header.Get("Content-Encoding"))
		case m.TTL == "":
			err = errors.New("no TTL header (RFC 8030 requires one)")
		default:
			m.Plaintext, err = s.decrypt(body)
		}
	}
	m.Err = err
	s.mu.Lock()
	if err == nil && s.hold {
		answer := make(chan int, 1)
		s.held = append(s.held, answer)
		s.mu.Unlock()
		select {
		case status = <-answer:
		case <-r.Context().Done(): // the sender gave up: nothing delivered
			s.mu.Lock()
			s.held = slices.DeleteFunc(s.held, func(c chan int) bool { return c == answer })
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
	} else if err == nil {
		status = s.status
		if s.fail > 0 {
			s.fail--
			status = s.failAs
		}
	}
	m.Status = status
	s.msgs = append(s.msgs, m)
	s.mu.Unlock()
	w.WriteHeader(status)
}

// checkVAPID verifies an Authorization of the form "vapid t=JWT, k=KEY"
// and returns the JWT's sub.
func (s *Stub) checkVAPID(h string) (string, error) {
	rest, ok := strings.CutPrefix(h, "vapid ")
	if !ok {
		return "", fmt.Errorf("authorization %q is not vapid", h)
	}
	var tok, key string
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			tok = v
		case "k":
			key = v
		}
	}
	if s.vapid != "" && key != s.vapid {
		return "", fmt.Errorf("k=%s is not the node's VAPID public key", key)
	}
	raw, err := base64.RawURLEncoding.DecodeString(key)
	if err != nil {
		return "", errors.New("k is not base64url")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		return "", errors.New("k is not an uncompressed P-256 key")
	}
	var claims jwt.RegisteredClaims
	_, err = jwt.ParseWithClaims(tok, &claims, func(*jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithAudience(s.srv.URL), jwt.WithExpirationRequired())
	if err != nil {
		return "", fmt.Errorf("vapid JWT: %w", err)
	}
	if claims.ExpiresAt.After(time.Now().Add(24 * time.Hour)) {
		return "", errors.New("vapid JWT expires more than 24 hours ahead, against RFC 8292")
	}
	if !strings.HasPrefix(claims.Subject, "mailto:") && !strings.HasPrefix(claims.Subject, "https:") {
		return "", fmt.Errorf("vapid sub %q is neither a mailto: nor an https: URL", claims.Subject)
	}
	return claims.Subject, nil
}

// decrypt opens an aes128gcm body (RFC 8188 with RFC 8291's keys): a
// header salt(16) rs(4) idlen(1) keyid (the sender's ephemeral public
// key), then one record whose plaintext ends in the delimiter 0x02 and
// zero padding.
func (s *Stub) decrypt(body []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("body shorter than the aes128gcm header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if idlen != 65 || len(body) < 21+idlen+17 {
		return nil, fmt.Errorf("keyid of %d bytes, want the sender's 65-byte public key", idlen)
	}
	senderRaw, rec := body[21:21+idlen], body[21+idlen:]
	if uint32(len(rec)) > rs {
		return nil, fmt.Errorf("record of %d bytes over the record size %d: one record expected", len(rec), rs)
	}
	sender, err := ecdh.P256().NewPublicKey(senderRaw)
	if err != nil {
		return nil, errors.New("the sender's key is not on P-256")
	}
	shared, err := s.priv.ECDH(sender)
	if err != nil {
		return nil, err
	}
	info := append(append([]byte("WebPush: info\x00"), s.priv.PublicKey().Bytes()...), senderRaw...)
	ikm, err := hkdf.Key(sha256.New, shared, s.auth, string(info), 32)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, rec, nil)
	if err != nil {
		return nil, fmt.Errorf("decrypt: %w", err)
	}
	end := bytes.LastIndexFunc(plain, func(r rune) bool { return r != 0 })
	if end < 0 || plain[end] != 2 {
		return nil, errors.New("no last-record delimiter 0x02 before the padding")
	}
	return plain[:end], nil
}

// Decode decodes a message's JSON payload into v.
func (m Message) Decode(v any) error { return json.Unmarshal(m.Plaintext, v) }
