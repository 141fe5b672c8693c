package client

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"

	"github.com/anteroom/anteroom/internal/wait"
)

// Client is one caller of a node's public API: one shopper (or one
// service acting for one user), named as the node's identity mode asks.
// Its methods send one call each, retried by its Retry rules.
//
// A *Client is safe for concurrent use. The zero value is not usable;
// call New.
type Client struct {
	base  string   // the node's URL, without a trailing slash
	url   *url.URL // base, parsed (the jar's key)
	hc    *http.Client
	retry Retry
	now   func() time.Time

	// The identity: a header naming the user (header mode), a header
	// carrying the shop's user token (jwt mode), or neither (anonymous:
	// the visitor cookie in hc.Jar).
	idHeader, idValue string
	extra             http.Header
	observe           func(Sent)
}

// Sent is one sending of a call, as an observer sees it (WithObserver).
type Sent struct {
	// Op is the call: "join", "status", "claim", "claims" or "release".
	Op string
	// Attempt counts the call's sendings, 1 for the first.
	Attempt int
	// Status is the answer's HTTP status; 0 when none came (Err says why).
	Status int
	// RetryAfter is the answer's Retry-After; 0 without one.
	RetryAfter time.Duration
	// Took is from sending the request to having read the answer.
	Took time.Duration
	// Err is why no answer came.
	Err error
}

// Option configures a Client.
type Option func(*Client) error

// The identity headers' default names (ANTEROOM_IDENTITY_HEADER and
// ANTEROOM_USER_TOKEN_HEADER).
const (
	DefaultUserHeader      = "X-User-ID"
	DefaultUserTokenHeader = "X-User-Token"
)

// maxBody bounds how much of an answer is read.
const maxBody = 1 << 20

// WithHTTPClient sends through hc (its transport, timeout and jar). In
// the anonymous identity mode the visitor cookie must be kept between
// calls: when hc has no Jar the Client uses a copy of hc with a jar of
// its own.
//
// Default: a client with http.DefaultTransport, a 30 s timeout and, in
// the anonymous mode, its own cookie jar.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error {
		if hc == nil {
			return errors.New("anteroom: nil http.Client")
		}
		c.hc = hc
		return nil
	}
}

// WithTransport sends through rt: many Clients (a crowd of shoppers) can
// share one transport and its connections while each keeps its own jar.
func WithTransport(rt http.RoundTripper) Option {
	return func(c *Client) error {
		if rt == nil {
			return errors.New("anteroom: nil transport")
		}
		c.hc = &http.Client{Transport: rt, Timeout: 30 * time.Second}
		return nil
	}
}

// WithUser names the caller user through header (ANTEROOM_IDENTITY=header;
// "" is X-User-ID). The node believes it only from a trusted proxy: this
// is for the shop's gateway or a service behind it, never for a browser.
func WithUser(header, user string) Option {
	return func(c *Client) error {
		if user == "" {
			return errors.New("anteroom: empty user")
		}
		c.idHeader, c.idValue = cmp(header, DefaultUserHeader), user
		return nil
	}
}

// WithUserToken names the caller by the shop's signed user token, sent in
// header (ANTEROOM_IDENTITY=jwt; "" is X-User-Token).
func WithUserToken(header, token string) Option {
	return func(c *Client) error {
		if token == "" {
			return errors.New("anteroom: empty user token")
		}
		c.idHeader, c.idValue = cmp(header, DefaultUserTokenHeader), token
		return nil
	}
}

// WithHeader adds a header to every call (an invite, a device id, a
// bypass pass).
func WithHeader(key, value string) Option {
	return func(c *Client) error {
		c.extra.Add(key, value)
		return nil
	}
}

// WithObserver calls f after each sending of a call, retries included,
// from the calling goroutine: for metrics and load generators (requests,
// latency by call, refusals). f must be safe for concurrent use when the
// Client is used concurrently.
func WithObserver(f func(Sent)) Option {
	return func(c *Client) error {
		c.observe = f
		return nil
	}
}

// WithRetry sets the retry rules.
//
// Default: Retry{} (its documented defaults)
func WithRetry(r Retry) Option {
	return func(c *Client) error {
		c.retry = r.withDefaults()
		return nil
	}
}

// New returns a Client of the node at baseURL (http or https, e.g.
// https://queue.shop.example). Without WithUser or WithUserToken it is
// anonymous: the node names it by the visitor cookie its first join sets.
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anteroom: base URL %q: want http(s)://host[:port]", baseURL)
	}
	c := &Client{base: u.String(), url: u, retry: Retry{}.withDefaults(), now: time.Now, extra: http.Header{}}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if c.hc == nil {
		c.hc = &http.Client{Timeout: 30 * time.Second}
	}
	if c.idHeader == "" && c.hc.Jar == nil {
		jar, _ := cookiejar.New(nil) // never fails without options
		hc := *c.hc
		hc.Jar = jar
		c.hc = &hc
	}
	return c, nil
}

// Anonymous reports whether the node names this caller by its visitor
// cookie.
func (c *Client) Anonymous() bool { return c.idHeader == "" }

// named reports whether the node knows who this caller is before a join:
// a user header or token, or a visitor cookie from an earlier answer.
func (c *Client) named() bool {
	if !c.Anonymous() {
		return true
	}
	for _, ck := range c.hc.Jar.Cookies(c.url) {
		if ck.Name == "anteroom_visitor" {
			return true
		}
	}
	return false
}

// NewIdempotencyKey returns a random key for a claim's Idempotency-Key:
// 22 characters of base64url (128 bits).
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// call is one call of the API, sent until Retry says stop.
type call struct {
	op, method, path string
	bearer, idemKey  string
	// replayable is asked before each retry after no answer came.
	replayable func() bool
}

// do sends k and returns the status and body of its 2xx answer, an *Error
// for a refusal, or the transport's error when no answer came.
func (c *Client) do(ctx context.Context, k call) (int, []byte, error) {
	for n := 1; ; n++ {
		start := time.Now()
		status, hdr, body, err := c.once(ctx, k)
		a := Attempt{N: n, Status: status}
		if err == nil && status != 0 {
			a.RetryAfter, a.HasRetryAfter = ParseRetryAfter(hdr.Get("Retry-After"), c.now())
		}
		if c.observe != nil {
			c.observe(Sent{Op: k.op, Attempt: n, Status: status, RetryAfter: a.RetryAfter, Took: time.Since(start), Err: err})
		}
		if err == nil && status >= 200 && status < 300 {
			return status, body, nil
		}
		if ctx.Err() != nil {
			return 0, nil, fmt.Errorf("anteroom: %s: %w", k.op, ctx.Err())
		}
		var refusal *Error
		if err == nil {
			refusal = ParseProblem(k.op, status, body, hdr.Get("Retry-After"), c.now())
			refusal.Attempts = n
		}
		if status == 0 || status == http.StatusBadGateway || status == http.StatusGatewayTimeout {
			a.Replayable = k.replayable == nil || k.replayable()
		}
		d, again := c.retry.Next(a)
		if !again {
			if refusal != nil {
				return status, nil, refusal
			}
			return 0, nil, fmt.Errorf("anteroom: %s: %w", k.op, err)
		}
		if !wait.Sleep(ctx, d) {
			return 0, nil, fmt.Errorf("anteroom: %s: %w", k.op, ctx.Err())
		}
	}
}

// once sends k one time.
func (c *Client) once(ctx context.Context, k call) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, k.method, c.base+k.path, http.NoBody)
	if err != nil {
		return 0, nil, nil, err
	}
	for key, vs := range c.extra {
		req.Header[key] = vs
	}
	if c.idHeader != "" {
		req.Header.Set(c.idHeader, c.idValue)
	}
	if k.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+k.bearer)
	}
	if k.idemKey != "" {
		req.Header.Set("Idempotency-Key", k.idemKey)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil { // cut mid-answer: as if no answer came
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, body, nil
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
