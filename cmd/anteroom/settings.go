package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/anteroom/anteroom/internal/clock"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/settings"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web"
)

//go:generate go run . settings-table -w ../../README.md

// options is what the settings fill: the node's configuration, the log
// format its logger is built with, and serve's shutdown timing.
type options struct {
	node.Config
	logFormat                string
	drainDelay, drainTimeout time.Duration
}

// registry is every node setting, in the order the README's table shows
// them: those of serve, worker and reconcile, then serve's own.
func registry(o *options) []settings.Setting {
	return append(nodeSettings(o), serveSettings(o)...)
}

// nodeSettings are the settings of a node, read by serve, worker and
// reconcile, each with where its value lands in o. Defaults come from
// node.DefaultConfig, so the flags, the table and a node started without
// them agree.
func nodeSettings(o *options) []settings.Setting {
	def, c := node.DefaultConfig(), &o.Config
	return []settings.Setting{
		{Name: "addr", Env: "ANTEROOM_ADDR", Default: def.Addr, Set: str(&c.Addr),
			Doc: "HTTP listen address"},
		{Name: "redis-url", Env: "ANTEROOM_REDIS_URL", Set: str(&c.RedisURL),
			Doc: "redis://host:port/db URL (redis://:password@host:port/db with a password, redacted in the log); empty with no cluster addresses starts an embedded Redis that is NOT durable"},
		{Name: "redis-cluster-addrs", Env: "ANTEROOM_REDIS_CLUSTER_ADDRS", Set: list(&c.RedisClusterAddrs),
			Doc: "comma-separated Redis Cluster seed addresses; set this or -redis-url, not both"},
		{Name: "nats-url", Env: "ANTEROOM_NATS_URL", Set: str(&c.NATSURL),
			Doc: "NATS server URLs, comma-separated; empty starts an embedded JetStream server storing under the data dir"},
		{Name: "stream-replicas", Env: "ANTEROOM_STREAM_REPLICAS", Default: strconv.Itoa(def.StreamReplicas), Set: replicas(&c.StreamReplicas),
			Doc: "order stream replicas, 1 to 5 (3 on a NATS cluster)"},
		{Name: "data-dir", Env: "ANTEROOM_DATA_DIR", Default: def.DataDir, Set: str(&c.DataDir),
			Doc: "directory for the embedded JetStream store and the generated keys and secrets"},
		{Name: "admin-token", Env: "ANTEROOM_ADMIN_TOKEN", Secret: true, Set: str(&c.AdminToken),
			Doc: "admin API bearer token, at least 24 characters (openssl rand -hex 24); patterned or example values are refused at start; empty: generated into DATA_DIR/admin-token"},
		{Name: "signing-keys", Env: "ANTEROOM_SIGNING_KEYS", Set: str(&c.SigningKeys),
			Doc: "admission signing key directory, shared by all nodes; a first key is generated when it has none; empty: DATA_DIR/keys"},
		{Name: "ticket-secret", Env: "ANTEROOM_TICKET_SECRET", Secret: true, Set: ticketSecret(&c.TicketSecret),
			Doc: "hex secret for queue tickets and visitor cookies, the same on all nodes: 32 random bytes (openssl rand -hex 32); zero, repeated, patterned, low-entropy or example values are refused at start; empty: read from or generated into DATA_DIR/ticket-secret"},
		{Name: "identity", Env: "ANTEROOM_IDENTITY", Default: string(def.Identity), Set: identity(&c.Identity),
			Doc: "how callers are named: anonymous (a signed visitor cookie; per-user limits then hold per browser only), jwt (the shop's user token, verified against -user-jwks; the user id header is then ignored) or header (a gateway's user id header, believed only from -trusted-proxies, which header mode requires; from any other peer the request is 401)"},
		{Name: "identity-header", Env: "ANTEROOM_IDENTITY_HEADER", Default: def.IdentityHeader, Set: str(&c.IdentityHeader),
			Doc: "header mode: the user id header; the gateway must set it and drop any copy the client sent (two lines are 400)"},
		{Name: "user-jwks", Env: "ANTEROOM_USER_JWKS", Set: str(&c.UserJWKS),
			Doc: "jwt mode: JWKS or PEM file of the shop's user-token keys, re-read every -key-reload"},
		{Name: "user-token-header", Env: "ANTEROOM_USER_TOKEN_HEADER", Default: def.UserTokenHeader, Set: str(&c.UserTokenHeader),
			Doc: "jwt mode: the header carrying the shop's user token (never Authorization, which carries tickets and admission tokens)"},
		{Name: "user-issuer", Env: "ANTEROOM_USER_ISSUER", Set: str(&c.UserIssuer),
			Doc: "jwt mode: the required iss of user tokens; jwt mode does not start without it unless -user-accept-any-issuer-audience"},
		{Name: "user-audience", Env: "ANTEROOM_USER_AUDIENCE", Set: str(&c.UserAudience),
			Doc: "jwt mode: the required aud of user tokens; jwt mode does not start without it unless -user-accept-any-issuer-audience"},
		{Name: "user-accept-any-issuer-audience", Env: "ANTEROOM_USER_ACCEPT_ANY_ISSUER_AUDIENCE", Default: "false", Set: boolean(&c.UserAcceptAnyIssuerAudience, "user accept any issuer audience"),
			Doc: "jwt mode: start without -user-issuer or -user-audience and accept any iss or aud not configured; unsafe (a token the shop minted for another service then names a user here)"},
		{Name: "user-max-token-age", Env: "ANTEROOM_USER_MAX_TOKEN_AGE", Default: tokens.DefaultUserMaxAge.String(),
			Set: duration(&c.UserMaxTokenAge, "user max token age", "a duration such as 24h (negative: no cap)", func(d time.Duration) bool { return d != 0 }),
			Doc: "jwt mode: the longest user-token lifetime accepted (exp - iat, or exp - now without iat); negative, e.g. -1s: no cap"},
		{Name: "metrics-addr", Env: "ANTEROOM_METRICS_ADDR", Set: str(&c.MetricsAddr),
			Doc: "serve /metrics only on this address (e.g. :9100), not on -addr: the production setting (deploy/ uses it); empty: /metrics on -addr"},
		{Name: "pprof-addr", Env: "ANTEROOM_PPROF_ADDR", Set: str(&c.PprofAddr),
			Doc: "serve Go profiles (/debug/pprof/: CPU, heap, allocations, goroutines, trace) on this address only; keep it on loopback or a private network (go tool pprof http://127.0.0.1:6060/debug/pprof/profile?seconds=10); empty: off"},
		{Name: "issuer", Env: "ANTEROOM_ISSUER", Default: def.Issuer, Set: str(&c.Issuer),
			Doc: "iss of admission tokens and of OIDC discovery; set it to the public base URL (https://queue.shop.example), else OIDC discovery is 404"},
		{Name: "audience", Env: "ANTEROOM_AUDIENCE", Default: def.Audience, Set: str(&c.Audience),
			Doc: "aud of admission tokens, which gateways check"},
		{Name: "key-reload", Env: "ANTEROOM_KEY_RELOAD", Default: def.KeyReload.String(),
			Set: duration(&c.KeyReload, "key reload", "a positive duration such as 10s", positive),
			Doc: "how often the node re-reads the signing key directory and the user JWKS"},
		{Name: "trusted-proxies", Env: "ANTEROOM_TRUSTED_PROXIES", Set: list(&c.TrustedProxies),
			Doc: "comma-separated addresses or CIDR ranges of proxies whose X-Forwarded-For, -Proto and -Host (and, in header mode, user id header) are believed; the client IP is the rightmost untrusted hop, several X-Forwarded-For lines read as one list"},
		{Name: "max-in-flight", Env: "ANTEROOM_MAX_IN_FLIGHT", Default: strconv.Itoa(def.MaxInFlight), Set: maxInFlight(&c.MaxInFlight),
			Doc: "requests in progress on this node before it answers 503 degraded"},
		{Name: "global-join-rate", Env: "ANTEROOM_GLOBAL_JOIN_RATE", Default: "0", Set: rate(&c.GlobalJoinRate, "global join rate"),
			Doc: "joins per second over all events and nodes (a Redis token bucket, node-local when Redis is slow); 0: unlimited"},
		{Name: "global-claim-rate", Env: "ANTEROOM_GLOBAL_CLAIM_RATE", Default: "0", Set: rate(&c.GlobalClaimRate, "global claim rate"),
			Doc: "claims per second over all events and nodes (a Redis token bucket, node-local when Redis is slow); 0: unlimited"},
		{Name: "log-format", Env: "ANTEROOM_LOG_FORMAT", Default: "json", Set: str(&o.logFormat),
			Doc: "log format: json or text"},
		{Name: "access-log", Env: "ANTEROOM_ACCESS_LOG", Default: string(def.AccessLog), Set: accessLog(&c.AccessLog),
			Doc: "which requests get an access-log line: off, errors (5xx answers and requests slower than -slow-request) or all"},
		{Name: "slow-request", Env: "ANTEROOM_SLOW_REQUEST", Default: def.SlowRequest.String(),
			Set: duration(&c.SlowRequest, "slow request", "a positive duration", positive),
			Doc: "requests at least this slow are logged by -access-log errors"},
		{Name: "slow-redis", Env: "ANTEROOM_SLOW_REDIS", Default: def.SlowRedis.String(),
			Set: duration(&c.SlowRedis, "slow redis", "a positive duration", positive),
			Doc: "Redis calls at least this slow count in anteroom_redis_slow_calls_total"},
		{Name: "webhook-allow-http", Env: "ANTEROOM_WEBHOOK_ALLOW_HTTP", Default: "false", Set: boolean(&c.WebhookAllowHTTP, "webhook allow http"),
			Doc: "accept and deliver to http (not only https) webhook URLs, and probe http shop health URLs; unsafe outside tests and loopback relays"},
		{Name: "clock-skew", Env: "ANTEROOM_CLOCK_SKEW", Default: "0", Set: clockSkew(&c.ClockSkew),
			Doc: "DRILL ONLY: shift this node's machine clock, e.g. +3s or -30s, at most ±5m, logged as DRILL at start; the node keeps its time on Redis TIME, so tokens, expiry checks and sale phases stay right"},
		{Name: "dev-captcha-siteverify-url", Env: "ANTEROOM_DEV_CAPTCHA_SITEVERIFY_URL", Set: siteverifyURL(&c.CaptchaSiteverifyURL),
			Doc: "development only: send every captcha check to this siteverify URL (a local stub) instead of the provider's; the node logs a warning"},
	}
}

// serveSettings are serve's own: how it shuts down.
func serveSettings(o *options) []settings.Setting {
	return []settings.Setting{
		{Name: "drain-delay", Env: "ANTEROOM_DRAIN_DELAY", Default: "5s",
			Set: duration(&o.drainDelay, "drain delay", "a duration such as 5s (0 for none)", func(d time.Duration) bool { return d >= 0 }),
			Doc: "serve only: lame-duck time after SIGTERM, while /readyz answers 503 and the node keeps serving, so load balancers stop sending traffic first; 0: none"},
		{Name: "drain-timeout", Env: "ANTEROOM_DRAIN_TIMEOUT", Default: "20s",
			Set: duration(&o.drainTimeout, "drain timeout", "a positive duration such as 20s", positive),
			Doc: "serve only: how long shutdown then waits for in-flight requests and the outbox flush"},
	}
}

func positive(d time.Duration) bool { return d > 0 }

func replicas(to *int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("stream replicas %q: %w", v, err)
		}
		*to = n
		return nil
	}
}

func ticketSecret(to *[]byte) func(string) error {
	return func(v string) error {
		*to = nil
		if v == "" {
			return nil
		}
		b, err := hex.DecodeString(v)
		if err != nil {
			return errors.New("ANTEROOM_TICKET_SECRET is not hex: want 64 hex digits, e.g. from openssl rand -hex 32")
		}
		*to = b
		return nil
	}
}

func identity(to *web.IdentityMode) func(string) error {
	return func(v string) (err error) {
		*to, err = web.ParseIdentityMode(v)
		return err
	}
}

func accessLog(to *web.AccessLog) func(string) error {
	return func(v string) (err error) {
		*to, err = web.ParseAccessLog(v)
		return err
	}
}

func clockSkew(to *time.Duration) func(string) error {
	return func(v string) error {
		d, err := clock.ParseSkew(v)
		if err != nil {
			return fmt.Errorf("ANTEROOM_CLOCK_SKEW: %w", err)
		}
		*to = d
		return nil
	}
}

func siteverifyURL(to *string) func(string) error {
	return func(v string) error {
		*to = ""
		if v == "" {
			return nil
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("dev captcha siteverify url %q: want an absolute http(s) URL", v)
		}
		*to = v
		return nil
	}
}

func maxInFlight(to *int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("max in flight %q: want a positive integer", v)
		}
		*to = n
		return nil
	}
}
