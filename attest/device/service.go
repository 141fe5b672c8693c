package device

import (
	"context"
	"crypto/x509"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/anteroom/anteroom/attest/appattest"
	"github.com/anteroom/anteroom/attest/playintegrity"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/luascript"
	"github.com/anteroom/anteroom/retention"
	"github.com/redis/go-redis/v9"
)

//go:embed register.lua
var registerLua string

//go:embed assert.lua
var assertLua string

// client is what the Service needs of Redis (*redis.Client,
// *redis.ClusterClient).
type client interface {
	redis.Scripter
	SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd
	HMGet(ctx context.Context, key string, fields ...string) *redis.SliceCmd
}

// Config configures a Service.
type Config struct {
	// Secret keys the challenges: the node's edge secret, the same on
	// every node, so a challenge issued by one verifies on all. Required
	// (at least 32 bytes).
	Secret []byte
	// PlayDecryptionKey and PlayVerificationKey are the operator's Play
	// Integrity keys from the Play Console (base64; see package
	// playintegrity). Empty: no sale on this node accepts a Play
	// Integrity token (each is refused 403 attestation_failed).
	//
	// Default: none
	PlayDecryptionKey, PlayVerificationKey string
	// AppleRoots replaces Apple's pinned App Attestation root. Only tests
	// set it, to a root they made; no setting of the node reaches it.
	//
	// Default: Apple's root only
	AppleRoots *x509.CertPool
	// ChallengeTTL is how long a challenge may wait for its evidence.
	//
	// Default: 2 minutes
	ChallengeTTL time.Duration
	// Clock is the node's clock (a Play Integrity token's age).
	//
	// Default: time.Now
	Clock func() time.Time
	// Retention is how long after a sale's end an attested key is kept
	// (the node's ANTEROOM_RETENTION).
	//
	// Default: retention.DefaultPeriod
	Retention time.Duration
}

// LogValue keeps the Play keys out of logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.Bool("play_keys", c.PlayDecryptionKey != ""), slog.Duration("challenge_ttl", c.ChallengeTTL))
}

// Service keeps the sales' challenges and attested keys in Redis and
// checks evidence against them. Make it with New; it is safe for
// concurrent use.
type Service struct {
	rdb          client
	cfg          Config
	challengeKey []byte
	register     *redis.Script
	assert       *redis.Script
	apple        sync.Map // appleApp → *appattest.Verifier
	google       sync.Map // package name → *playintegrity.Verifier
}

type appleApp struct {
	id          string
	development bool
}

// New returns a Service over rdb, or an error when the Play keys are set
// and do not parse (one without the other is an error too).
func New(rdb client, cfg Config) (*Service, error) {
	if len(cfg.Secret) < 32 {
		return nil, errors.New("device: Config.Secret must be at least 32 bytes")
	}
	if cfg.ChallengeTTL <= 0 {
		cfg.ChallengeTTL = 2 * time.Minute
	}
	if cfg.Retention <= 0 {
		cfg.Retention = retention.DefaultPeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if (cfg.PlayDecryptionKey == "") != (cfg.PlayVerificationKey == "") {
		return nil, errors.New("device: the Play Integrity decryption and verification keys go together")
	}
	if cfg.PlayDecryptionKey != "" {
		if _, err := playintegrity.ParseDecryptionKey(cfg.PlayDecryptionKey); err != nil {
			return nil, err
		}
		if _, err := playintegrity.ParseVerificationKey(cfg.PlayVerificationKey); err != nil {
			return nil, err
		}
	}
	return &Service{rdb: rdb, cfg: cfg, challengeKey: challengeKeyOf(cfg.Secret), register: luascript.New(registerLua), assert: luascript.New(assertLua)}, nil
}

// PlayKeys reports whether the node has Play Integrity keys.
func (s *Service) PlayKeys() bool { return s.cfg.PlayDecryptionKey != "" }

func tag(ev string) string                  { return "ar:{" + ev + "#att}:" }
func spentKey(ev, ch string) string         { return tag(ev) + "s:" + ch }
func deviceKey(ev string, id []byte) string { return tag(ev) + "k:" + hex.EncodeToString(id) }

// RegisterApple verifies an App Attest attestation object made for
// challenge by key keyID (base64, as the app reports it) for sale cfg's
// iOS app, and stores the key: its assertions may then prove joins and
// claims until the sale's signals expire. It returns the key id. Errors:
// ErrMalformed, appattest.ErrMalformed (400); ErrChallenge,
// appattest.ErrAttestation (403); nothing is stored on any of them.
func (s *Service) RegisterApple(ctx context.Context, cfg *event.Config, keyID string, object []byte, challenge string) ([]byte, error) {
	if cfg.Attestation.Apple == nil {
		return nil, fmt.Errorf("%w: this sale has no iOS app (attestation.apple)", appattest.ErrAttestation)
	}
	id, err := decodeKeyID(keyID)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Clock()
	markFor, err := s.openChallenge(cfg.ID, challenge, now)
	if err != nil {
		return nil, err
	}
	v, err := s.appleVerifier(cfg.Attestation.Apple)
	if err != nil {
		return nil, err
	}
	att, err := v.VerifyAttestation(now, object, id, []byte(challenge))
	if err != nil {
		return nil, err
	}
	key := att.Key
	res, err := s.register.Run(ctx, s.rdb, []string{spentKey(cfg.ID, challenge), deviceKey(cfg.ID, key.ID)},
		key.PublicKeyBytes(), retention.Until(cfg.EndsAt, s.cfg.Retention).UnixMilli(), markFor.Milliseconds()+1).Int64()
	if err != nil {
		return nil, fmt.Errorf("device: store key: %w", err)
	}
	if res == 0 {
		return nil, ErrChallenge
	}
	return key.ID, nil
}

// decodeKeyID reads an App Attest key id: base64 (either alphabet) of 32
// bytes.
func decodeKeyID(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%w: key id is not base64 of 32 bytes", ErrMalformed)
}

// appleVerifier returns the verifier of app, made once.
func (s *Service) appleVerifier(app *event.AppleAttestation) (*appattest.Verifier, error) {
	k := appleApp{app.AppID, app.Development}
	if v, ok := s.apple.Load(k); ok {
		return v.(*appattest.Verifier), nil
	}
	v, err := appattest.New(appattest.Config{AppID: app.AppID, AllowDevelopment: app.Development, Roots: s.cfg.AppleRoots})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", appattest.ErrAttestation, err)
	}
	s.apple.Store(k, v)
	return v, nil
}

// googleVerifier returns the verifier of package name, made once.
func (s *Service) googleVerifier(name string) (*playintegrity.Verifier, error) {
	if v, ok := s.google.Load(name); ok {
		return v.(*playintegrity.Verifier), nil
	}
	if !s.PlayKeys() {
		return nil, fmt.Errorf("%w: this node has no Play Integrity keys (ANTEROOM_PLAY_INTEGRITY_DECRYPTION_KEY)", playintegrity.ErrAttestation)
	}
	v, err := playintegrity.New(playintegrity.Config{DecryptionKey: s.cfg.PlayDecryptionKey, VerificationKey: s.cfg.PlayVerificationKey, PackageName: name})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", playintegrity.ErrAttestation, err)
	}
	s.google.Store(name, v)
	return v, nil
}
