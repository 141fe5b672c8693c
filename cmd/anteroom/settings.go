package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/anteroom/anteroom/attest/playintegrity"
	"github.com/anteroom/anteroom/internal/clock"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/settings"
	"github.com/anteroom/anteroom/push"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web"
	"github.com/anteroom/anteroom/web/protect"
)

//go:generate go run . settings-table -w ../../docs/configure.md

// options is what the settings fill: the node's configuration, the log
// format its logger is built with, and serve's shutdown timing.
type options struct {
	node.Config
	logFormat                string
	drainDelay, drainTimeout time.Duration
}

// registry is every node setting, in the order docs/configure.md's table shows
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
	return withEnv([]settings.Setting{
		{Name: "addr", Default: def.Addr, Set: str(&c.Addr),
			Doc: "HTTP listen address"},
		{Name: "redis-url", Set: str(&c.RedisURL),
			Doc: "redis://host:port/db URL (redis://:password@host:port/db with a password, redacted in the log); empty with no cluster addresses starts an embedded Redis that is NOT durable"},
		{Name: "redis-cluster-addrs", Set: list(&c.RedisClusterAddrs),
			Doc: "comma-separated Redis Cluster seed addresses; set this or -redis-url, not both"},
		{Name: "nats-url", Set: str(&c.NATSURL),
			Doc: "NATS server URLs, comma-separated; empty starts an embedded JetStream server storing under the data dir"},
		{Name: "stream-replicas", Default: strconv.Itoa(def.StreamReplicas), Set: replicas(&c.StreamReplicas),
			Doc: "order stream replicas, 1 to 5 (3 on a NATS cluster)"},
		{Name: "data-dir", Default: def.DataDir, Set: str(&c.DataDir),
			Doc: "directory for the embedded JetStream store and the generated keys and secrets"},
		{Name: "admin-token", Secret: true, Set: str(&c.AdminToken),
			Doc: "admin API bearer token, at least 24 characters (openssl rand -hex 24); patterned or example values are refused at start; empty: generated into DATA_DIR/admin-token"},
		{Name: "signing-keys", Set: str(&c.SigningKeys),
			Doc: "admission signing key directory, shared by all nodes; a first key is generated when it has none; empty: DATA_DIR/keys"},
		{Name: "ticket-secret", Secret: true, Set: ticketSecret(&c.TicketSecret),
			Doc: "hex secret for queue tickets and visitor cookies, the same on all nodes: 32 random bytes (openssl rand -hex 32); zero, repeated, patterned, low-entropy or example values are refused at start; empty: read from or generated into DATA_DIR/ticket-secret"},
		{Name: "identity", Default: string(def.Identity), Set: identity(&c.Identity),
			Doc: "how callers are named: anonymous (a signed visitor cookie; per-user limits then hold per browser only), jwt (the shop's user token, verified against -user-jwks; the user id header is then ignored) or header (a gateway's user id header, believed only from -trusted-proxies, which header mode requires; from any other peer the request is 401)"},
		{Name: "identity-header", Default: def.IdentityHeader, Set: str(&c.IdentityHeader),
			Doc: "header mode: the user id header; the gateway must set it and drop any copy the client sent (two lines are 400)"},
		{Name: "user-jwks", Set: str(&c.UserJWKS),
			Doc: "jwt mode: JWKS or PEM file of the shop's user-token keys, re-read every -key-reload"},
		{Name: "user-token-header", Default: def.UserTokenHeader, Set: str(&c.UserTokenHeader),
			Doc: "jwt mode: the header carrying the shop's user token (never Authorization, which carries tickets and admission tokens)"},
		{Name: "user-issuer", Set: str(&c.UserIssuer),
			Doc: "jwt mode: the required iss of user tokens; jwt mode does not start without it unless -user-accept-any-issuer-audience"},
		{Name: "user-audience", Set: str(&c.UserAudience),
			Doc: "jwt mode: the required aud of user tokens; jwt mode does not start without it unless -user-accept-any-issuer-audience"},
		{Name: "user-accept-any-issuer-audience", Default: "false", Set: boolean(&c.UserAcceptAnyIssuerAudience, "user accept any issuer audience"),
			Doc: "jwt mode: start without -user-issuer or -user-audience and accept any iss or aud not configured; unsafe (a token the shop minted for another service then names a user here)"},
		{Name: "user-max-token-age", Default: tokens.DefaultUserMaxAge.String(),
			Set: duration(&c.UserMaxTokenAge, "user max token age", "a duration such as 24h (negative: no cap)", func(d time.Duration) bool { return d != 0 }),
			Doc: "jwt mode: the longest user-token lifetime accepted (exp - iat, or exp - now without iat); negative, e.g. -1s: no cap"},
		{Name: "metrics-addr", Default: def.MetricsAddr, Set: str(&c.MetricsAddr),
			Doc: "the metrics listener: GET /metrics on this address only (loopback by default; deploy/ sets :9100 for Prometheus on the pod or container network); never on -addr unless -metrics-public"},
		{Name: "metrics-public", Default: "false", Set: boolean(&c.MetricsPublic, "metrics public"),
			Doc: "also serve /metrics on -addr to anyone who reaches it; unsafe: the metrics name every sale, unannounced ones too, and the node's load"},
		{Name: "pprof-addr", Set: str(&c.PprofAddr),
			Doc: "serve Go profiles (/debug/pprof/: CPU, heap, allocations, goroutines, trace) on this address only; keep it on loopback or a private network (go tool pprof http://127.0.0.1:6060/debug/pprof/profile?seconds=10); empty: off"},
		{Name: "issuer", Default: def.Issuer, Set: str(&c.Issuer),
			Doc: "iss of admission tokens and of OIDC discovery; set it to the public base URL (https://queue.shop.example), else OIDC discovery is 404"},
		{Name: "audience", Default: def.Audience, Set: str(&c.Audience),
			Doc: "aud of admission tokens, which gateways check"},
		{Name: "key-reload", Default: def.KeyReload.String(),
			Set: duration(&c.KeyReload, "key reload", "a positive duration such as 10s", positive),
			Doc: "how often the node re-reads the signing key directory and the user JWKS"},
		{Name: "trusted-proxies", Set: list(&c.TrustedProxies),
			Doc: "comma-separated addresses or CIDR ranges of proxies whose X-Forwarded-For, -Proto and -Host (and, in header mode, user id header) are believed; the client IP is the rightmost untrusted hop, several X-Forwarded-For lines read as one list"},
		{Name: "max-in-flight", Default: strconv.Itoa(def.MaxInFlight), Set: maxInFlight(&c.MaxInFlight),
			Doc: "requests in progress on this node before it answers 503 degraded"},
		{Name: "list-upload-max-bytes", Default: strconv.FormatInt(def.ListUploadMaxBytes, 10), Set: positiveInt64(&c.ListUploadMaxBytes, "list upload max bytes"),
			Doc: "the largest list upload (POST /admin/lists/{name}/entries, streamed; every other request body is held to 16 KB); a larger one is 413 too_large, unread past the limit"},
		{Name: "list-max-entries", Default: strconv.FormatInt(def.ListMaxEntries, 10), Set: positiveInt64(&c.ListMaxEntries, "list max entries"),
			Doc: "the most entries a block or eligibility list may hold (at most 10000000); an upload or entry over it is 413 too_large, nothing applied"},
		{Name: "global-join-rate", Default: "0", Set: rate(&c.GlobalJoinRate, "global join rate"),
			Doc: "joins per second over all events and nodes (a Redis token bucket, node-local when Redis is slow); 0: unlimited"},
		{Name: "global-claim-rate", Default: "0", Set: rate(&c.GlobalClaimRate, "global claim rate"),
			Doc: "claims per second over all events and nodes (a Redis token bucket, node-local when Redis is slow); 0: unlimited"},
		{Name: "retention", Default: def.Retention.String(),
			Set: duration(&c.Retention, "retention", "a duration of at least 1h such as 168h", func(d time.Duration) bool { return d >= time.Hour }),
			Doc: "how long after a sale's end its per-person keys are kept in Redis (queue entries, claims and their idempotency keys, signal sets, admission sessions, push subscriptions, passes' uses: docs/security.md \"Personal data\"); each then expires; at least 1h"},
		{Name: "log-format", Default: "json", Set: str(&o.logFormat),
			Doc: "log format: json or text"},
		{Name: "access-log", Default: string(def.AccessLog), Set: accessLog(&c.AccessLog),
			Doc: "which requests get an access-log line: off, errors (5xx answers and requests slower than -slow-request) or all"},
		{Name: "slow-request", Default: def.SlowRequest.String(),
			Set: duration(&c.SlowRequest, "slow request", "a positive duration", positive),
			Doc: "requests at least this slow are logged by -access-log errors"},
		{Name: "slow-redis", Default: def.SlowRedis.String(),
			Set: duration(&c.SlowRedis, "slow redis", "a positive duration", positive),
			Doc: "Redis calls at least this slow count in anteroom_redis_slow_calls_total"},
		{Name: "trace-status-ratio", Default: strconv.FormatFloat(def.TraceStatusRatio, 'f', -1, 64), Set: traceRatio(&c.TraceStatusRatio),
			Doc: "share of status polls traced while tracing is on (the OTEL_* variables, see docs/operate.md \"Traces\"), 0 to 1; 0: none; every other request is traced"},
		{Name: "webhook-allow-http", Default: "false", Set: boolean(&c.WebhookAllowHTTP, "webhook allow http"),
			Doc: "accept and deliver to http (not only https) webhook URLs, and probe http shop health URLs; unsafe outside tests and loopback relays"},
		{Name: "allow-private-targets", Set: list(&c.AllowPrivateTargets),
			Doc: "comma-separated networks (CIDRs or addresses, e.g. 10.1.0.0/16) that shop health URLs, webhooks and push endpoints may reach although not public; every other loopback, private, link-local (cloud metadata), CGNAT, multicast or unspecified address is refused when dialled, after name resolution; empty: public addresses only"},
		{Name: "play-integrity-decryption-key", Secret: true, Set: playKey(&c.PlayIntegrityDecryptionKey, func(v string) (any, error) { return playintegrity.ParseDecryptionKey(v) }),
			Doc: "the Play Console's Play Integrity decryption key (base64, 32 bytes), the same on every node; with the verification key, sales may require an attested Android app (attestation.google); empty: no sale may"},
		{Name: "play-integrity-verification-key", Set: playKey(&c.PlayIntegrityVerificationKey, func(v string) (any, error) { return playintegrity.ParseVerificationKey(v) }),
			Doc: "the Play Console's Play Integrity verification key (base64 DER of an EC P-256 public key); required with the decryption key"},
		{Name: "push-vapid-key", Set: str(&c.PushVAPIDKey),
			Doc: "file holding the Web Push VAPID private key, the same on every node (anteroom keys vapid -out FILE); empty: Web Push is off (the page still changes its title and icon and can show a notification while open)"},
		{Name: "push-subject", Set: str(&c.PushSubject),
			Doc: "the VAPID contact push services may write to, mailto:you@shop.example or an https URL; required with -push-vapid-key"},
		{Name: "push-hosts", Default: strings.Join(push.DefaultHosts, ","), Set: list(&c.PushHosts),
			Doc: "comma-separated push service hosts (with their subdomains) a shopper's subscription may name: the node POSTs to them"},
		{Name: "push-allow-http", Default: "false", Set: boolean(&c.PushAllowHTTP, "push allow http"),
			Doc: "accept http (not only https) push endpoints; unsafe outside tests with a local push service stub"},
		{Name: "crawler-resolver", Set: str(&c.CrawlerResolver),
			Doc: "the DNS server (host:port, e.g. 10.0.0.2:53) asked to verify search-engine crawlers for the rule function verified_crawler(): reverse name under a crawler's published domain, resolving back to the address; empty: the system's resolver"},
		{Name: "crawler-domains", Set: list(&c.CrawlerDomains),
			Doc: "comma-separated domains whose hosts count as crawlers besides the published ones (docs/configure.md \"Verified crawlers\"), each of two labels or more; a host's reverse name must still resolve back to its address"},
		{Name: "clock-skew", Default: "0", Set: clockSkew(&c.ClockSkew),
			Doc: "DRILL ONLY: shift this node's machine clock, e.g. +3s or -30s, at most ±5m, logged as DRILL at start; the node keeps its time on Redis TIME, so tokens, expiry checks and sale phases stay right"},
		{Name: "dev-captcha-siteverify-url", Set: siteverifyURL(&c.CaptchaSiteverifyURL),
			Doc: "development only: send every captcha check to this siteverify URL, a stub on this machine (host 127.0.0.1, [::1] or localhost resolving to loopback only; serve refuses any other), instead of the provider's; the node logs a warning"},
	})
}

// withEnv names each setting's environment variable: ANTEROOM_ and the
// flag's name in capitals, '-' as '_'.
func withEnv(list []settings.Setting) []settings.Setting {
	for i := range list {
		list[i].Env = "ANTEROOM_" + strings.ToUpper(strings.ReplaceAll(list[i].Name, "-", "_"))
	}
	return list
}

// serveSettings are serve's own: how it shuts down.
func serveSettings(o *options) []settings.Setting {
	return withEnv([]settings.Setting{
		{Name: "drain-delay", Default: "5s",
			Set: duration(&o.drainDelay, "drain delay", "a duration such as 5s (0 for none)", func(d time.Duration) bool { return d >= 0 }),
			Doc: "serve only: lame-duck time after SIGTERM, while /readyz answers 503 and the node keeps serving, so load balancers stop sending traffic first; 0: none"},
		{Name: "drain-timeout", Default: "20s",
			Set: duration(&o.drainTimeout, "drain timeout", "a positive duration such as 20s", positive),
			Doc: "serve only: how long shutdown then waits for in-flight requests and the outbox flush"},
	})
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

func identity(to *protect.IdentityMode) func(string) error {
	return func(v string) (err error) {
		*to, err = protect.ParseIdentityMode(v)
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

func positiveInt64(to *int64, what string) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return fmt.Errorf("%s %q: want a positive integer", what, v)
		}
		*to = n
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

// traceRatio stores a share from 0 to 1; 0 is stored as -1, the node's
// "none" (its 0 is the default).
func traceRatio(to *float64) func(string) error {
	return func(v string) error {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || !(r >= 0 && r <= 1) {
			return fmt.Errorf("trace status ratio %q: want a share from 0 to 1", v)
		}
		if r == 0 {
			r = -1
		}
		*to = r
		return nil
	}
}

// playKey stores a Play Integrity key that parse accepts (empty: none).
// The parsers' errors never quote the key.
func playKey(to *string, parse func(string) (any, error)) func(string) error {
	return func(v string) error {
		if v != "" {
			if _, err := parse(v); err != nil {
				return err
			}
		}
		*to = v
		return nil
	}
}
