// Package node wires one anteroom node: Redis (external, cluster or
// embedded), NATS JetStream (external or embedded), the domain services, the
// background loops and the HTTP edge. cmd/anteroom parses configuration and
// calls Start; tests start whole nodes on :0 the same way.
package node

import (
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/anteroom/anteroom/retention"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/door/crawler"
	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/clock"
	"github.com/anteroom/anteroom/internal/netguard"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/telemetry"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web"
	"github.com/anteroom/anteroom/web/protect"
	"github.com/anteroom/anteroom/web/staffapi"
	"github.com/gofiber/fiber/v2"
)

// Config is a node's process configuration. Each field a deployment sets
// has one entry in the settings registry of cmd/anteroom (settings.go):
// its flag, ANTEROOM_* environment variable, default (from DefaultConfig)
// and doc, from which docs/configure.md's settings table is generated. Tick,
// Manual, Tap, CaptchaTimeout, Limiter, DoorLists and DoorRules are for tests
// and embedders only; DemoSignInLinks for the demo command only.
type Config struct {
	// Addr is the HTTP listen address.
	//
	// Default: :8080
	Addr string
	// MetricsAddr is the address of the metrics listener, which serves
	// GET /metrics and nothing else (Prometheus scrapes it on loopback or
	// a private network). The public Addr answers 404 at /metrics unless
	// MetricsPublic: the metrics name every sale, announced or not, and
	// the node's load. Empty: no metrics listener (the zero Config, for
	// embedders and tests); the command's default is DefaultMetricsAddr.
	//
	// Default: "" (DefaultConfig: DefaultMetricsAddr)
	MetricsAddr string
	// MetricsPublic also serves GET /metrics on the public Addr, to anyone
	// who reaches it: unsafe (every sale's id, unannounced ones too, and
	// the node's load), asked for by name, for a demo on one machine.
	//
	// Default: false
	MetricsPublic bool
	// PprofAddr, when set, serves the Go runtime profiles
	// (/debug/pprof/: CPU, heap, allocations, goroutines, trace) on a
	// listener of its own. Keep it on loopback or a private network: a
	// profile shows the code and the heap, and profiling costs CPU.
	//
	// Default: "" (off)
	PprofAddr string
	// RedisURL is a redis:// URL. Empty with no cluster addresses starts
	// an embedded, non-durable Redis-protocol server.
	RedisURL string
	// RedisClusterAddrs are seed addresses of a Redis Cluster.
	RedisClusterAddrs []string
	// NATSURL lists NATS servers (comma-separated). Empty starts an
	// embedded NATS server with JetStream storing under DataDir.
	NATSURL string
	// StreamReplicas is the order stream's replica count.
	//
	// Default: 1
	StreamReplicas int
	// DataDir holds the embedded JetStream store, generated secrets and
	// keys.
	//
	// Default: ./anteroom-data
	DataDir string
	// AdminToken authorises the admin API. Empty: generated and written to
	// DataDir/admin-token.
	AdminToken string
	// SigningKeys is the admission key directory.
	//
	// Default: DataDir/keys
	SigningKeys string
	// TicketSecret signs queue tickets and visitor cookies; every node of
	// a deployment needs the same one. Empty: read from or generated into
	// DataDir/ticket-secret.
	TicketSecret []byte
	// Identity is how callers are named: anonymous (a signed visitor
	// cookie), jwt (the shop's user token) or header (IdentityHeader,
	// believed only from TrustedProxies, which header mode requires).
	//
	// Default: anonymous
	Identity protect.IdentityMode
	// IdentityHeader is the header mode's user id header, believed only
	// from TrustedProxies.
	//
	// Default: X-User-ID
	IdentityHeader string
	// UserJWKS is the JWKS or PEM file of the shop's user tokens (jwt
	// mode), re-read every KeyReload.
	UserJWKS string
	// UserTokenHeader carries the shop's user token in jwt mode; never
	// Authorization, which carries tickets and admission tokens.
	//
	// Default: X-User-Token
	UserTokenHeader string
	// UserIssuer, when set, must equal the iss of user tokens (jwt mode).
	UserIssuer string
	// UserAudience, when set, must be among the aud of user tokens (jwt
	// mode).
	UserAudience string
	// UserAcceptAnyIssuerAudience lets jwt mode start without UserIssuer
	// or UserAudience, accepting any iss or aud that is not configured:
	// then a token the shop minted for another service names a user
	// here too. Unsafe; asked for by name.
	//
	// Default: false (jwt mode needs UserIssuer and UserAudience)
	UserAcceptAnyIssuerAudience bool
	// UserMaxTokenAge caps the lifetime (exp - iat) of user tokens in jwt
	// mode; longer-lived tokens are refused. Negative: no cap.
	//
	// Default: 24h
	UserMaxTokenAge time.Duration
	// Issuer is the iss of admission tokens and of OIDC discovery, best
	// the node's public base URL (https://queue.shop.example).
	//
	// Default: anteroom
	Issuer string
	// Audience is the aud of admission tokens, which gateways check.
	//
	// Default: anteroom-claim
	Audience string
	// KeyReload is how often the node re-reads the signing key directory
	// (rotations by other nodes or `anteroom keys`) and the user JWKS file.
	//
	// Default: 10s
	KeyReload time.Duration
	// Tick is how often the node refreshes its view and advances frontiers.
	//
	// Default: 100ms
	Tick time.Duration
	// ClockSkew shifts this node's machine clock for a fault drill (a
	// soak, a game day): a drill setting, never for production, refused
	// beyond clock.MaxSkew either way and logged loudly at start. The node
	// keeps its time on Redis TIME (see internal/clock), so a skew should
	// change nothing a client sees.
	//
	// Default: 0
	ClockSkew time.Duration
	// Manual turns off the background loops (view refresh, frontier
	// ticks, outbox and key reloads): tests that count Redis commands
	// drive the node with Snapshots.Refresh themselves.
	Manual bool
	// Tap is a middleware run first on every request of the public
	// listener, for tests only: internal/nodetest checks each exchange
	// against the HTTP contract with it (web.Config.Tap).
	//
	// Default: none
	Tap fiber.Handler
	// DemoSignInLinks serves the console's one-time sign-in links
	// (GET /admin/session/link, valid from loopback only) and gives
	// the Node their maker (Node.SignInLinks): the demo command's way
	// into the console. It has no setting: only code that starts a
	// node, the demo, sets it.
	//
	// Default: false
	DemoSignInLinks bool
	// DoorLists and DoorRules replace the node's views of the door's
	// lists (package door/lists) and rules (package door/rules), for
	// tests and embedders only.
	//
	// Default: the node's own
	DoorLists door.Lists
	DoorRules door.Rules
	// WebhookAllowHTTP accepts and delivers to http webhook URLs; by
	// default webhooks must be https.
	//
	// Default: false
	WebhookAllowHTTP bool
	// AllowPrivateTargets are networks (CIDRs or addresses) the node may
	// connect to for URLs others give it (shop health URLs and webhooks,
	// set by staff; Web Push endpoints, named by browsers) although they
	// are not public: by default loopback, private, link-local (cloud
	// metadata), CGNAT, multicast and unspecified addresses are refused
	// at dial time (package netguard). Allow a shop's private network by
	// name, e.g. 10.1.0.0/16 (ANTEROOM_ALLOW_PRIVATE_TARGETS).
	//
	// Default: none
	AllowPrivateTargets []string
	// PlayIntegrityDecryptionKey and PlayIntegrityVerificationKey are
	// the operator's Play Integrity keys from the Play Console (base64),
	// which verify the integrity tokens of sales whose Android app
	// attests (event.Attestation.Google). Both or neither.
	//
	// Default: none (no sale may attest an Android app)
	PlayIntegrityDecryptionKey, PlayIntegrityVerificationKey string
	// AppAttestRoots replaces Apple's pinned App Attestation root: tests
	// only, with a root they made. No setting reaches it.
	//
	// Default: Apple's root only
	AppAttestRoots *x509.CertPool
	// PushVAPIDKey is the file holding the Web Push VAPID private key
	// (`anteroom keys vapid` writes one; the same on every node). Empty:
	// Web Push is off; the page still calls the shopper back with its
	// title, icon, sound and a notification while it runs.
	PushVAPIDKey string
	// PushSubject is the VAPID contact push services may write to: a
	// mailto: address or an https URL. Required with PushVAPIDKey.
	PushSubject string
	// PushHosts are the push services' hosts a subscription's endpoint
	// may name (each with its subdomains).
	//
	// Default: push.DefaultHosts (FCM, Mozilla, Apple, Windows)
	PushHosts []string
	// PushAllowHTTP accepts http push endpoints: a local push service
	// stub in tests only, asked for by name.
	//
	// Default: false
	PushAllowHTTP bool
	// CaptchaSiteverifyURL sends every captcha check to this URL instead
	// of the provider's siteverify endpoint: for tests and development
	// only (a local stub), asked for by name
	// (ANTEROOM_DEV_CAPTCHA_SITEVERIFY_URL). Its host must be a loopback
	// address or localhost resolving to loopback only: the node refuses
	// to start otherwise.
	//
	// Default: the providers' endpoints
	CaptchaSiteverifyURL string
	// CaptchaTimeout bounds one siteverify call.
	//
	// Default: 3s
	CaptchaTimeout time.Duration
	// CrawlerResolver is the DNS server (host:port) the node asks to
	// verify search-engine crawlers' addresses (package door/crawler, the
	// rule function verified_crawler()).
	//
	// Default: "" (the system's resolver)
	CrawlerResolver string
	// CrawlerDomains are crawler domains verified besides the published
	// ones (crawler.DefaultDomains): a PTR name under one of them that
	// resolves back to the address is a crawler. Each must have two labels
	// or more (crawler.CheckDomain).
	//
	// Default: none
	CrawlerDomains []string
	// AccessLog says which requests get an access-log line: off, errors
	// (5xx answers and requests slower than SlowRequest) or all.
	//
	// Default: errors
	AccessLog web.AccessLog
	// SlowRequest is the duration from which a request counts as slow in
	// the access log.
	//
	// Default: 1s
	SlowRequest time.Duration
	// SlowRedis is the duration from which a Redis command or pipeline
	// counts in anteroom_redis_slow_calls_total.
	//
	// Default: 50ms
	SlowRedis time.Duration
	// TrustedProxies are addresses or CIDR ranges of the proxies in front
	// of the node whose X-Forwarded-For names the client and, in header
	// mode, whose IdentityHeader names the user.
	//
	// Default: none (the peer is the client)
	TrustedProxies []string
	// MaxInFlight caps requests in progress on this node; more get 503
	// degraded.
	//
	// Default: protect.DefaultMaxInFlight
	MaxInFlight int
	// ListUploadMaxBytes bounds a list upload's body (POST
	// /admin/lists/{name}/entries, the one route not held to 16 KB); a
	// larger one answers 413 too_large, unread past the limit.
	//
	// Default: staffapi.DefaultListUploadMax (512 MiB)
	ListUploadMaxBytes int64
	// ListMaxEntries bounds a list's entries; an upload or an entry that
	// would make a list longer answers 413 too_large, nothing applied.
	//
	// Default: lists.MaxEntries (10 million)
	ListMaxEntries int64
	// GlobalJoinRate and GlobalClaimRate cap joins and claims per second
	// over every event and node together (burst: one second's worth).
	//
	// Default: 0, unlimited
	GlobalJoinRate, GlobalClaimRate float64
	// Tracing says whether and where the node exports OpenTelemetry
	// traces (package telemetry; cmd/anteroom reads it from the OTEL_*
	// environment, telemetry.FromEnv). The tracer provider is shut down,
	// its queued spans exported, when the node closes.
	//
	// Default: off (no exporter, no span started)
	Tracing telemetry.Config
	// TraceStatusRatio is the share of status polls traced while tracing
	// is on, at most 1; negative: none. Every other request is traced.
	//
	// Default: DefaultTraceStatusRatio
	TraceStatusRatio float64
	// Retention is how long after a sale's end its per-person keys
	// (queue, claims, signals, sessions, push subscriptions, passes'
	// uses) are kept in Redis (package retention).
	//
	// Default: retention.DefaultPeriod (7 days)
	Retention time.Duration
	// RetentionEvery is how often the node sweeps ended sales' keys; for
	// tests.
	//
	// Default: retention.DefaultEvery
	RetentionEvery time.Duration
	// Limiter tunes how rate limiting degrades when Redis is slow.
	//
	// Default: limit.Config's defaults
	Limiter limit.Config
	// Log is the node's logger.
	//
	// Default: slog.Default()
	Log *slog.Logger
}

// DefaultTraceStatusRatio is the share of status polls traced while
// tracing is on: one in a thousand.
const DefaultTraceStatusRatio = 0.001

// DefaultConfig is the configuration a node runs with when nothing is set:
// where the command's flags take their defaults from.
func DefaultConfig() Config {
	var c Config
	c.defaults()
	c.MetricsAddr = DefaultMetricsAddr
	return c
}

// DefaultMetricsAddr is the command's metrics listener: loopback only, on
// the port deploy/ scrapes (which sets ANTEROOM_METRICS_ADDR=:9100 so that
// Prometheus reaches it over the pod or container network).
const DefaultMetricsAddr = "127.0.0.1:9100"

func (c *Config) defaults() {
	if c.Addr == "" {
		c.Addr = ":8080"
	}
	if c.DataDir == "" {
		c.DataDir = "anteroom-data"
	}
	if c.SigningKeys == "" {
		c.SigningKeys = filepath.Join(c.DataDir, "keys")
	}
	if c.Identity == "" {
		c.Identity = protect.IdentityAnonymous
	}
	if c.IdentityHeader == "" {
		c.IdentityHeader = protect.UserIDHeader
	}
	if c.UserTokenHeader == "" {
		c.UserTokenHeader = protect.UserTokenHeader
	}
	if c.Issuer == "" {
		c.Issuer = tokens.DefaultIssuer
	}
	if c.Audience == "" {
		c.Audience = tokens.DefaultAudience
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = protect.DefaultMaxInFlight
	}
	if c.ListUploadMaxBytes == 0 {
		c.ListUploadMaxBytes = staffapi.DefaultListUploadMax
	}
	if c.ListMaxEntries == 0 {
		c.ListMaxEntries = lists.MaxEntries
	}
	if c.StreamReplicas == 0 {
		c.StreamReplicas = 1
	}
	if c.Tick == 0 {
		c.Tick = 100 * time.Millisecond
	}
	if c.KeyReload == 0 {
		c.KeyReload = 10 * time.Second
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.AccessLog == "" {
		c.AccessLog = web.AccessLogErrors
	}
	if c.SlowRequest == 0 {
		c.SlowRequest = time.Second
	}
	if c.SlowRedis == 0 {
		c.SlowRedis = 50 * time.Millisecond
	}
	if c.Retention == 0 {
		c.Retention = retention.DefaultPeriod
	}
	if c.TraceStatusRatio == 0 {
		c.TraceStatusRatio = DefaultTraceStatusRatio
	}
}

func (c *Config) validate() error {
	if _, err := protect.ParseIdentityMode(string(c.Identity)); err != nil {
		return err
	}
	if c.Identity == protect.IdentityJWT && c.UserJWKS == "" {
		return errors.New("identity jwt needs ANTEROOM_USER_JWKS")
	}
	if c.Identity == protect.IdentityHeader && len(c.TrustedProxies) == 0 {
		return errors.New("identity header needs ANTEROOM_TRUSTED_PROXIES: the gateway addresses whose user id header is believed")
	}
	if err := c.checkUserTokens(); err != nil {
		return err
	}
	if c.KeyReload < 0 {
		return fmt.Errorf("key reload interval %v: want > 0", c.KeyReload)
	}
	if c.RedisURL != "" && len(c.RedisClusterAddrs) > 0 {
		return errors.New("set either ANTEROOM_REDIS_URL or ANTEROOM_REDIS_CLUSTER_ADDRS, not both")
	}
	if c.StreamReplicas < 1 || c.StreamReplicas > 5 {
		return fmt.Errorf("stream replicas %d: want 1 to 5", c.StreamReplicas)
	}
	if _, err := web.ParseAccessLog(string(c.AccessLog)); err != nil {
		return err
	}
	if c.SlowRequest < 0 || c.SlowRedis < 0 {
		return errors.New("slow request and slow redis thresholds must not be negative")
	}
	if err := c.checkSecrets(); err != nil {
		return err
	}
	if err := web.ValidTrustedProxies(c.TrustedProxies); err != nil {
		return err
	}
	if c.ClockSkew > clock.MaxSkew || c.ClockSkew < -clock.MaxSkew {
		return fmt.Errorf("clock skew %s: a drill setting of at most ±%s", c.ClockSkew, clock.MaxSkew)
	}
	if _, err := netguard.Allow(c.AllowPrivateTargets); err != nil {
		return fmt.Errorf("ANTEROOM_ALLOW_PRIVATE_TARGETS: %w", err)
	}
	if err := c.checkCrawlers(); err != nil {
		return err
	}
	if err := checkDevSiteverify(c.CaptchaSiteverifyURL); err != nil {
		return err
	}
	if c.Retention < time.Hour {
		return fmt.Errorf("retention %v: want at least 1h", c.Retention)
	}
	if !(c.TraceStatusRatio <= 1) {
		return fmt.Errorf("trace status ratio %v: want at most 1", c.TraceStatusRatio)
	}
	if c.MaxInFlight < 0 || !(c.GlobalJoinRate >= 0 && c.GlobalJoinRate <= event.MaxRate) || !(c.GlobalClaimRate >= 0 && c.GlobalClaimRate <= event.MaxRate) {
		return fmt.Errorf("max in flight and global rates must be between 0 and %d", event.MaxRate)
	}
	if c.ListUploadMaxBytes < 0 || c.ListMaxEntries < 0 || c.ListMaxEntries > lists.MaxEntries {
		return fmt.Errorf("list upload max bytes must be positive and list max entries between 1 and %d", lists.MaxEntries)
	}
	return nil
}

// checkSecrets refuses configured secrets that are known or guessable
// (tokens.CheckSecret, tokens.CheckAdminToken). Generated ones are
// checked when read (see secrets.go).
func (c *Config) checkSecrets() error {
	if c.TicketSecret != nil {
		if err := tokens.CheckSecret(c.TicketSecret); err != nil {
			return fmt.Errorf("refusing to start: ANTEROOM_TICKET_SECRET: %w", err)
		}
	}
	if c.AdminToken != "" {
		if err := tokens.CheckAdminToken(c.AdminToken); err != nil {
			return fmt.Errorf("refusing to start: ANTEROOM_ADMIN_TOKEN: %w", err)
		}
	}
	return nil
}

// checkUserTokens makes jwt mode say which tokens it accepts: a user token
// is believed only when it was minted for anteroom (aud) by the shop
// (iss), unless UserAcceptAnyIssuerAudience is set.
func (c *Config) checkUserTokens() error {
	if c.Identity != protect.IdentityJWT || c.UserAcceptAnyIssuerAudience {
		return nil
	}
	if c.UserIssuer == "" || c.UserAudience == "" {
		return errors.New("identity jwt needs ANTEROOM_USER_ISSUER and ANTEROOM_USER_AUDIENCE (the iss and aud of the shop's tokens meant for anteroom); set ANTEROOM_USER_ACCEPT_ANY_ISSUER_AUDIENCE=true to accept tokens minted for anything")
	}
	return nil
}

// targets is the policy of the addresses the node dials for URLs others
// give it (validate has checked AllowPrivateTargets).
func (c *Config) targets() netguard.Policy {
	p, _ := netguard.Allow(c.AllowPrivateTargets)
	return p
}

// checkCrawlers checks the crawler resolver's host:port and the crawler
// domains added (a bare top-level domain would make every host under it
// a crawler).
func (c *Config) checkCrawlers() error {
	if c.CrawlerResolver != "" {
		if _, err := crawler.ResolverAt(c.CrawlerResolver); err != nil {
			return fmt.Errorf("ANTEROOM_CRAWLER_RESOLVER: %w", err)
		}
	}
	for _, d := range c.CrawlerDomains {
		if err := crawler.CheckDomain(d); err != nil {
			return fmt.Errorf("ANTEROOM_CRAWLER_DOMAINS: %w", err)
		}
	}
	return nil
}

// crawlers is the crawler verifier's configuration (checkCrawlers has
// checked it): the published domains and the added ones, asked of the
// crawler resolver or the system's.
func (c *Config) crawlers() crawler.Config {
	cc := crawler.Config{Domains: append(crawler.DefaultDomains(), c.CrawlerDomains...)}
	if c.CrawlerResolver != "" {
		cc.Resolver, _ = crawler.ResolverAt(c.CrawlerResolver)
	}
	return cc
}
