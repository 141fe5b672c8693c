package main

import (
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/anteroom/anteroom/internal/clock"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/web"
)

// nodeFlags registers the node's configuration on fs, each flag defaulting
// to its ANTEROOM_* environment variable, and returns a function that builds
// the node.Config after fs.Parse.
func nodeFlags(fs *flag.FlagSet, getenv func(string) string, logTo io.Writer) func() (node.Config, error) {
	env := func(name, def string) string {
		if v := getenv("ANTEROOM_" + name); v != "" {
			return v
		}
		return def
	}
	def := node.DefaultConfig()
	addr := fs.String("addr", env("ADDR", def.Addr), "HTTP listen address (ANTEROOM_ADDR)")
	redisURL := fs.String("redis-url", env("REDIS_URL", ""), "redis:// URL; empty starts an embedded, non-durable Redis (ANTEROOM_REDIS_URL)")
	cluster := fs.String("redis-cluster-addrs", env("REDIS_CLUSTER_ADDRS", ""), "comma-separated Redis Cluster seed addresses (ANTEROOM_REDIS_CLUSTER_ADDRS)")
	natsURL := fs.String("nats-url", env("NATS_URL", ""), "NATS server URLs; empty starts an embedded JetStream server (ANTEROOM_NATS_URL)")
	replicas := fs.String("stream-replicas", env("STREAM_REPLICAS", strconv.Itoa(def.StreamReplicas)), "order stream replicas (ANTEROOM_STREAM_REPLICAS)")
	dataDir := fs.String("data-dir", env("DATA_DIR", def.DataDir), "directory for embedded JetStream data, keys and secrets (ANTEROOM_DATA_DIR)")
	admin := fs.String("admin-token", env("ADMIN_TOKEN", ""), "admin bearer token; empty generates one into the data dir (ANTEROOM_ADMIN_TOKEN)")
	keys := fs.String("signing-keys", env("SIGNING_KEYS", ""), "admission signing key directory; generated when empty (ANTEROOM_SIGNING_KEYS)")
	secret := fs.String("ticket-secret", env("TICKET_SECRET", ""), "hex secret (≥32 bytes) for queue tickets, shared by all nodes (ANTEROOM_TICKET_SECRET)")
	identity := fs.String("identity", env("IDENTITY", string(def.Identity)), "caller identity: anonymous (signed visitor cookie), jwt (the shop's user token) or header (a gateway's user id header, believed only from -trusted-proxies) (ANTEROOM_IDENTITY)")
	idHeader := fs.String("identity-header", env("IDENTITY_HEADER", def.IdentityHeader), "user id header in header mode, believed only from -trusted-proxies (ANTEROOM_IDENTITY_HEADER)")
	userJWKS := fs.String("user-jwks", env("USER_JWKS", ""), "JWKS or PEM file of the shop's user tokens in jwt mode, re-read every key reload (ANTEROOM_USER_JWKS)")
	userHeader := fs.String("user-token-header", env("USER_TOKEN_HEADER", def.UserTokenHeader), "header carrying the shop's user token in jwt mode (ANTEROOM_USER_TOKEN_HEADER)")
	userIssuer := fs.String("user-issuer", env("USER_ISSUER", ""), "required iss of user tokens in jwt mode (ANTEROOM_USER_ISSUER)")
	userAudience := fs.String("user-audience", env("USER_AUDIENCE", ""), "required aud of user tokens in jwt mode (ANTEROOM_USER_AUDIENCE)")
	trust := trustFlags(fs, env)
	issuer := fs.String("issuer", env("ISSUER", def.Issuer), "iss of admission tokens and OIDC discovery, best the public base URL (ANTEROOM_ISSUER)")
	audience := fs.String("audience", env("AUDIENCE", def.Audience), "aud of admission tokens (ANTEROOM_AUDIENCE)")
	keyReload := fs.String("key-reload", env("KEY_RELOAD", def.KeyReload.String()), "how often to re-read the signing keys and user JWKS (ANTEROOM_KEY_RELOAD)")
	logFormat := fs.String("log-format", env("LOG_FORMAT", "json"), "log format: json or text (ANTEROOM_LOG_FORMAT)")
	accessLog := fs.String("access-log", env("ACCESS_LOG", string(def.AccessLog)), "access log: off, errors (5xx and slow requests) or all (ANTEROOM_ACCESS_LOG)")
	slowRequest := fs.String("slow-request", env("SLOW_REQUEST", def.SlowRequest.String()), "requests at least this slow are logged by -access-log errors (ANTEROOM_SLOW_REQUEST)")
	slowRedis := fs.String("slow-redis", env("SLOW_REDIS", def.SlowRedis.String()), "Redis calls at least this slow count in anteroom_redis_slow_calls_total (ANTEROOM_SLOW_REDIS)")
	proxies := fs.String("trusted-proxies", env("TRUSTED_PROXIES", ""), "comma-separated addresses or CIDR ranges of proxies whose X-Forwarded-For (and, in header mode, user id header) is believed (ANTEROOM_TRUSTED_PROXIES)")
	inFlight := fs.String("max-in-flight", env("MAX_IN_FLIGHT", strconv.Itoa(def.MaxInFlight)), "requests in progress on this node before it answers 503 degraded (ANTEROOM_MAX_IN_FLIGHT)")
	globalJoin := fs.String("global-join-rate", env("GLOBAL_JOIN_RATE", "0"), "joins per second over all events and nodes; 0: unlimited (ANTEROOM_GLOBAL_JOIN_RATE)")
	webhookHTTP := fs.String("webhook-allow-http", env("WEBHOOK_ALLOW_HTTP", "false"), "accept http (not only https) webhook URLs; unsafe outside tests and loopback relays (ANTEROOM_WEBHOOK_ALLOW_HTTP)")
	clockSkew := fs.String("clock-skew", env("CLOCK_SKEW", "0"), "DRILL ONLY: shift this node's clock, e.g. +3s or -30s, at most ±5m; logged at start (ANTEROOM_CLOCK_SKEW)")
	devSiteverify := fs.String("dev-captcha-siteverify-url", env("DEV_CAPTCHA_SITEVERIFY_URL", ""), "development only: send every captcha check to this siteverify URL (a local stub) instead of the provider's (ANTEROOM_DEV_CAPTCHA_SITEVERIFY_URL)")
	globalClaim := fs.String("global-claim-rate", env("GLOBAL_CLAIM_RATE", "0"), "claims per second over all events and nodes; 0: unlimited (ANTEROOM_GLOBAL_CLAIM_RATE)")
	return func() (node.Config, error) {
		cfg := node.Config{
			Addr: *addr, RedisURL: *redisURL, NATSURL: *natsURL, DataDir: *dataDir, AdminToken: *admin,
			SigningKeys: *keys, IdentityHeader: *idHeader, UserJWKS: *userJWKS,
			UserTokenHeader: *userHeader, UserIssuer: *userIssuer, UserAudience: *userAudience,
			Issuer: *issuer, Audience: *audience,
		}
		reload, err := time.ParseDuration(*keyReload)
		if err != nil || reload <= 0 {
			return cfg, fmt.Errorf("key reload %q: want a positive duration such as 10s", *keyReload)
		}
		cfg.KeyReload = reload
		if *cluster != "" {
			for _, a := range strings.Split(*cluster, ",") {
				if a = strings.TrimSpace(a); a != "" {
					cfg.RedisClusterAddrs = append(cfg.RedisClusterAddrs, a)
				}
			}
		}
		n, err := strconv.Atoi(*replicas)
		if err != nil {
			return cfg, fmt.Errorf("stream replicas %q: %w", *replicas, err)
		}
		cfg.StreamReplicas = n
		if *secret != "" {
			b, err := hex.DecodeString(*secret)
			if err != nil {
				return cfg, fmt.Errorf("ANTEROOM_TICKET_SECRET is not hex: want 64 hex digits, e.g. from openssl rand -hex 32")
			}
			cfg.TicketSecret = b
		}
		if cfg.Identity, err = web.ParseIdentityMode(*identity); err != nil {
			return cfg, err
		}
		if cfg.AccessLog, err = web.ParseAccessLog(*accessLog); err != nil {
			return cfg, err
		}
		if cfg.ClockSkew, err = clock.ParseSkew(*clockSkew); err != nil {
			return cfg, fmt.Errorf("ANTEROOM_CLOCK_SKEW: %w", err)
		}
		if v := *devSiteverify; v != "" {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return cfg, fmt.Errorf("dev captcha siteverify url %q: want an absolute http(s) URL", v)
			}
			cfg.CaptchaSiteverifyURL = v
		}
		if cfg.WebhookAllowHTTP, err = strconv.ParseBool(*webhookHTTP); err != nil {
			return cfg, fmt.Errorf("webhook allow http %q: want true or false", *webhookHTTP)
		}
		for _, d := range []struct {
			name, value string
			to          *time.Duration
		}{{"slow request", *slowRequest, &cfg.SlowRequest}, {"slow redis", *slowRedis, &cfg.SlowRedis}} {
			v, err := time.ParseDuration(d.value)
			if err != nil || v <= 0 {
				return cfg, fmt.Errorf("%s %q: want a positive duration", d.name, d.value)
			}
			*d.to = v
		}
		if err := edgeFlags(&cfg, *proxies, *inFlight, *globalJoin, *globalClaim); err != nil {
			return cfg, err
		}
		if err := trust(&cfg); err != nil {
			return cfg, err
		}
		cfg.Log = newLogger(logTo, *logFormat, slog.LevelInfo)
		return cfg, nil
	}
}

func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// edgeFlags reads the edge protection flags into cfg.
func edgeFlags(cfg *node.Config, proxies, inFlight, globalJoin, globalClaim string) error {
	for _, p := range strings.Split(proxies, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.TrustedProxies = append(cfg.TrustedProxies, p)
		}
	}
	n, err := strconv.Atoi(inFlight)
	if err != nil || n < 1 {
		return fmt.Errorf("max in flight %q: want a positive integer", inFlight)
	}
	cfg.MaxInFlight = n
	for _, r := range []struct {
		name, value string
		to          *float64
	}{{"global join rate", globalJoin, &cfg.GlobalJoinRate}, {"global claim rate", globalClaim, &cfg.GlobalClaimRate}} {
		v, err := strconv.ParseFloat(r.value, 64)
		if err != nil || !(v >= 0) {
			return fmt.Errorf("%s %q: want a number of requests per second, 0 for unlimited", r.name, r.value)
		}
		*r.to = v
	}
	return nil
}
