// Package push calls a shopper back when it is their turn, with a Web Push
// message (RFC 8030) to the browser that subscribed on the waiting room's
// page: the message is encrypted for the subscription (RFC 8291,
// aes128gcm) and the request signed with the operator's VAPID key (RFC
// 8292), so only that browser reads it and the push service knows who
// sends. It is an operator option, off unless a VAPID key is configured.
//
// It owns what a subscription may be and where it is kept: Save validates
// one (an endpoint on an allowed push service, https unless the node
// allows http by name, keys of the right lengths, a bounded size) and keeps
// it in Redis under the ticket's place in the queue, on the event's slot,
// until an hour after the sale ends; Notify sends the notice for a place
// once and forgets the subscription. Who is notified and when is package
// lifecycle's: its PushDeliverer calls Notify for each your_turn event
// from the lifecycle stream, at least once.
//
// Encryption and signing are github.com/SherClockHolmes/webpush-go's
// (see Service.send for what this package adds around it).
package push

import (
	"crypto/ecdh"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Errors Save returns; each is a 400 for the client (web/kit).
var (
	// ErrInvalid: the subscription is malformed or names an endpoint the
	// node does not send to.
	ErrInvalid = errors.New("push: invalid subscription")
	// ErrTooLarge: the subscription is larger than MaxSubscription.
	ErrTooLarge = errors.New("push: subscription too large")
	// ErrWrongEvent: the ticket presented with the subscription is for
	// another event than the URL's.
	ErrWrongEvent = errors.New("push: subscription for another event")
	// ErrDisabled: the node has no VAPID key: Web Push is off.
	ErrDisabled = errors.New("push: web push is not enabled")
)

// MaxSubscription bounds a subscription's JSON in bytes: a browser's is
// about 400 (an endpoint URL and two keys).
const MaxSubscription = 2048

// MaxText bounds the title and body the page asks the notice to show, in
// characters.
const MaxText = 160

// DefaultHosts are the push services browsers use, matched as host
// suffixes: Chrome and Edge (FCM), Firefox (Mozilla autopush), Safari
// (Apple), and the Windows notification service.
var DefaultHosts = []string{"fcm.googleapis.com", "push.services.mozilla.com", "push.apple.com", "notify.windows.com"}

// Subscription is a browser's PushSubscription (its toJSON()), with the
// notice's text in the page's language.
type Subscription struct {
	// Endpoint is the push service URL the message is POSTed to.
	Endpoint string `json:"endpoint"`
	// Keys are the browser's P-256 public key and auth secret.
	Keys Keys `json:"keys"`
	// ExpirationTime is the browser's (usually null); not used.
	ExpirationTime *float64 `json:"expirationTime,omitempty"`
	// Title and Body are what the notice shows (the page's language);
	// the service worker has defaults.
	Title string `json:"title,omitempty"`
	Body  string `json:"body,omitempty"`
}

// Keys are a subscription's keys, base64url.
type Keys struct {
	// P256dh is the uncompressed P-256 public key (65 bytes).
	P256dh string `json:"p256dh"`
	// Auth is the authentication secret (16 bytes).
	Auth string `json:"auth"`
}

// Endpoints is which push service endpoints a node sends to.
type Endpoints struct {
	// Hosts are allowed host names, each matching itself and its
	// subdomains. A shopper chooses the endpoint: without this list the
	// node could be made to POST anywhere.
	Hosts []string
	// AllowHTTP allows http endpoints (a local push service stub in
	// tests; ANTEROOM_PUSH_ALLOW_HTTP). Otherwise https only.
	AllowHTTP bool
}

// Check returns nil if s may be saved and sent to.
func (e Endpoints) Check(s *Subscription) error {
	if len(s.Endpoint) > 1024 {
		return fmt.Errorf("%w: endpoint longer than 1024 bytes", ErrInvalid)
	}
	u, err := url.Parse(s.Endpoint)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" || !(u.Scheme == "https" || u.Scheme == "http" && e.AllowHTTP) {
		return fmt.Errorf("%w: endpoint must be an absolute https URL without credentials", ErrInvalid)
	}
	if !e.allowed(u.Hostname()) {
		return fmt.Errorf("%w: endpoint host %s is not a push service this node sends to", ErrInvalid, u.Hostname())
	}
	if _, err := PublicKey(s.Keys.P256dh); err != nil {
		return err
	}
	if a, err := decodeKey(s.Keys.Auth); err != nil || len(a) != 16 {
		return fmt.Errorf("%w: keys.auth must be 16 bytes, base64url", ErrInvalid)
	}
	if utf8.RuneCountInString(s.Title) > MaxText || utf8.RuneCountInString(s.Body) > MaxText {
		return fmt.Errorf("%w: title and body are at most %d characters", ErrInvalid, MaxText)
	}
	return nil
}

func (e Endpoints) allowed(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, h := range e.Hosts {
		h = strings.ToLower(h)
		if host == h || strings.HasSuffix(host, "."+h) {
			return true
		}
	}
	return false
}

// PublicKey decodes a subscription's p256dh key: an uncompressed point on
// P-256, base64url (padded or not).
func PublicKey(b64 string) (*ecdh.PublicKey, error) {
	raw, err := decodeKey(b64)
	if err != nil || len(raw) != 65 {
		return nil, fmt.Errorf("%w: keys.p256dh must be a 65-byte P-256 public key, base64url", ErrInvalid)
	}
	k, err := ecdh.P256().NewPublicKey(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: keys.p256dh is not a point on P-256", ErrInvalid)
	}
	return k, nil
}

func decodeKey(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// place names a ticket's place in a sale: its seq (Laned for a lane
// member), prefixed by the join shard in a sale of join shards (shard ≥ 0).
func place(shard int, seq int64) string {
	if shard < 0 {
		return strconv.FormatInt(seq, 10)
	}
	return strconv.Itoa(shard) + "." + strconv.FormatInt(seq, 10)
}
