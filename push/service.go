package push

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"
	"github.com/anteroom/anteroom/internal/luascript"
	"github.com/anteroom/anteroom/internal/netguard"
	"github.com/redis/go-redis/v9"
)

//go:embed unlock.lua
var unlockLua string

// Config configures a Service.
type Config struct {
	// PrivateKey is the VAPID private key: the P-256 scalar, 32 bytes,
	// base64url — the content of the key file `anteroom keys vapid`
	// writes (ANTEROOM_PUSH_VAPID_KEY). Required.
	PrivateKey string
	// Subject is the VAPID contact push services may write to:
	// "mailto:..." or an https URL (ANTEROOM_PUSH_SUBJECT). Required.
	Subject string
	// Endpoints are the push services the node sends to.
	//
	// Default: DefaultHosts, https only
	Endpoints Endpoints
	// Timeout bounds one push request.
	//
	// Default: 10s
	Timeout time.Duration
	// Targets says which addresses the default Client may connect to
	// (ANTEROOM_ALLOW_PRIVATE_TARGETS): a shopper's browser names the
	// endpoint, and a host on the push services' list could still resolve
	// to a private address.
	//
	// Default: public addresses only
	Targets netguard.Policy
	// Client sends the push requests (tests give one trusting their
	// stub's certificate). It must not follow redirects, and should judge
	// the addresses it dials as Targets does.
	//
	// Default: Targets.Client(Timeout), which never follows a redirect
	Client *http.Client
}

// Service keeps push subscriptions in Redis and sends the notices. Safe
// for concurrent use.
type Service struct {
	rdb    redis.UniversalClient
	cfg    Config
	public string
	client *http.Client
	unlock *redis.Script // unlock.lua: release a send lock if it is still ours
}

// New returns a Service on rdb; it refuses a missing or malformed key
// and a subject that is neither mailto: nor https:.
func New(rdb redis.UniversalClient, cfg Config) (*Service, error) {
	raw, err := decodeKey(strings.TrimSpace(cfg.PrivateKey))
	if err != nil || len(raw) != 32 {
		return nil, errors.New("push: the VAPID private key must be 32 bytes, base64url (anteroom keys vapid)")
	}
	priv, err := ecdh.P256().NewPrivateKey(raw)
	if err != nil {
		return nil, fmt.Errorf("push: VAPID private key: %w", err)
	}
	if !strings.HasPrefix(cfg.Subject, "mailto:") && !strings.HasPrefix(cfg.Subject, "https://") {
		return nil, errors.New("push: the VAPID subject must be a mailto: address or an https URL (ANTEROOM_PUSH_SUBJECT)")
	}
	cfg.PrivateKey = base64.RawURLEncoding.EncodeToString(raw)
	if cfg.Endpoints.Hosts == nil {
		cfg.Endpoints.Hosts = DefaultHosts
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	client := cfg.Client
	if client == nil {
		client = cfg.Targets.Client(cfg.Timeout)
	}
	return &Service{rdb: rdb, cfg: cfg, public: base64.RawURLEncoding.EncodeToString(priv.PublicKey().Bytes()), client: client, unlock: luascript.New(unlockLua)}, nil
}

// GenerateKey returns a new VAPID private key, base64url, for a key file.
func GenerateKey() (string, error) {
	k, err := ecdh.P256().GenerateKey(nil)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(k.Bytes()), nil
}

// PublicKey returns the VAPID public key, base64url: the page's
// applicationServerKey.
func (s *Service) PublicKey() string { return s.public }

func subKey(ev, place string) string { return "ar:{" + ev + "}:push:" + place }
func onKey(ev string) string         { return "ar:{" + ev + "}:push:on" }

// Save validates body (a Subscription's JSON, at most MaxSubscription
// bytes) and keeps it for the ticket's place in sale ev (shard -1 for a
// sale of one join shard) until until (at least a minute from now),
// replacing the place's earlier one. Errors: ErrTooLarge, ErrInvalid, or
// a Redis error; nothing is saved on any.
func (s *Service) Save(ctx context.Context, ev string, shard int, seq int64, body []byte, until, now time.Time) error {
	if len(body) > MaxSubscription {
		return fmt.Errorf("%w: at most %d bytes", ErrTooLarge, MaxSubscription)
	}
	var sub Subscription
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sub); err != nil {
		return fmt.Errorf("%w: not a PushSubscription's JSON", ErrInvalid)
	}
	if err := s.cfg.Endpoints.Check(&sub); err != nil {
		return err
	}
	clean, err := json.Marshal(sub)
	if err != nil {
		return err
	}
	ttl := max(until.Sub(now), time.Minute)
	pipe := s.rdb.TxPipeline()
	pipe.Set(ctx, subKey(ev, place(shard, seq)), clean, ttl)
	pipe.Set(ctx, onKey(ev), 1, ttl)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("push %s: %w", ev, err)
	}
	return nil
}

// Subscribed reports whether anyone of sale ev saved a subscription (the
// lifecycle recorder then records your_turn events for the sale).
func (s *Service) Subscribed(ctx context.Context, ev string) (bool, error) {
	n, err := s.rdb.Exists(ctx, onKey(ev)).Result()
	if err != nil {
		return false, fmt.Errorf("push %s: %w", ev, err)
	}
	return n == 1, nil
}

// Message is the notice's payload, as the service worker reads it.
type Message struct {
	// Type is "your_turn".
	Type string `json:"type"`
	// Event is the sale's id and URL its waiting room, where the
	// shopper claims.
	Event string `json:"event"`
	URL   string `json:"url"`
	// Title and Body are the page's text, when it sent some.
	Title string `json:"title,omitempty"`
	Body  string `json:"body,omitempty"`
}

// Notify sends the "your turn" notice to the subscription of the place
// (shard, seq) of sale ev, if one is kept, and then forgets it: the place
// is notified once, and a retry after a success finds nothing to send.
// ttl is how long the push service may hold the message (the admission
// window: a notice later than it is useless). A subscription the push
// service no longer knows (404, 410) is forgotten too. The error of a
// failed attempt is retryable, as is the error of a call made while
// another call sends the same place's notice (one sender at a time).
func (s *Service) Notify(ctx context.Context, ev string, shard int, seq int64, ttl time.Duration) error {
	key := subKey(ev, place(shard, seq))
	if n, err := s.rdb.Exists(ctx, key).Result(); err != nil {
		return fmt.Errorf("push %s: %w", ev, err)
	} else if n == 0 {
		return nil // most places have no subscription: no lock taken
	}
	// One sender per place at a time: two copies of the your_turn event
	// handled at once would both read the subscription and both send. The
	// other copy is retried later and finds the subscription gone (sent)
	// or the lock free (the send failed).
	// The lock holds a random token, and only its holder deletes it
	// (unlock.lua): a copy whose send outlived the lock's TTL finds another
	// copy's lock there and leaves it.
	lock := key + ":sending"
	token := rand.Text()
	took, err := s.rdb.SetNX(ctx, lock, token, s.cfg.Timeout+5*time.Second).Result()
	if err != nil {
		return fmt.Errorf("push %s: %w", ev, err)
	}
	if !took {
		return fmt.Errorf("push %s: another copy of this notice is being sent", ev)
	}
	defer s.unlock.Run(context.WithoutCancel(ctx), s.rdb, []string{lock}, token)
	// Read again under the lock: a copy that sent meanwhile forgot it.
	raw, err := s.rdb.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("push %s: %w", ev, err)
	}
	var sub Subscription
	if err := json.Unmarshal(raw, &sub); err != nil || s.cfg.Endpoints.Check(&sub) != nil {
		// Saved under other settings (a host since removed): not sent.
		return s.rdb.Del(ctx, key).Err()
	}
	msg, err := json.Marshal(Message{Type: "your_turn", Event: ev, URL: "/e/" + ev, Title: sub.Title, Body: sub.Body})
	if err != nil {
		return err
	}
	status, err := s.send(ctx, &sub, msg, ttl)
	if err != nil {
		return fmt.Errorf("push %s: %w", ev, err)
	}
	switch {
	case status >= 200 && status < 300, status == http.StatusNotFound, status == http.StatusGone:
		return s.rdb.Del(ctx, key).Err()
	default:
		return fmt.Errorf("push %s: the push service answered %d", ev, status)
	}
}

// send encrypts msg for sub (RFC 8291) and POSTs it with a VAPID
// Authorization (RFC 8292, valid 12 hours: the library's), urgency high,
// and returns the push service's status. Around webpush-go: the subject is
// passed as the library expects it (it adds "mailto:" itself), the
// client never follows redirects, and the response body is drained and
// closed; the error never holds the endpoint URL (it may carry a token).
func (s *Service) send(ctx context.Context, sub *Subscription, msg []byte, ttl time.Duration) (int, error) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	resp, err := webpush.SendNotificationWithContext(rctx, msg, &webpush.Subscription{
		Endpoint: sub.Endpoint, Keys: webpush.Keys{Auth: sub.Keys.Auth, P256dh: sub.Keys.P256dh},
	}, &webpush.Options{
		HTTPClient:      s.client,
		Subscriber:      strings.TrimPrefix(s.cfg.Subject, "mailto:"),
		TTL:             int(max(ttl, time.Second) / time.Second),
		Urgency:         webpush.UrgencyHigh,
		VAPIDPublicKey:  s.public,
		VAPIDPrivateKey: s.cfg.PrivateKey,
	})
	if err != nil {
		return 0, errors.New("push request failed: " + netguard.Class(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}
