package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/client"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web"
)

// simClock is a clock the test steps by hand.
type simClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *simClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// cdnJWKS serves a node's JWKS the way an HTTP cache in front of it does:
// one copy kept for the max-age the node's answer advertises.
type cdnJWKS struct {
	clock  *simClock
	keys   *tokens.KeySet
	mu     sync.Mutex
	body   []byte
	stored time.Time
}

func (c *cdnJWKS) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if c.body == nil || now.Sub(c.stored) >= web.JWKSMaxAge {
		c.body, c.stored = c.keys.JWKS(), now
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	_, _ = w.Write(c.body)
}

// TestKeyRotationNoGap runs a key rotation with `anteroom keys` as an
// operator would, on a simulated clock, while a node signs a token every
// second and a client.Verifier (real refresh and refetch intervals) checks
// them through an HTTP cache honouring the JWKS's max-age. The Verifier
// refreshes one second before every node reload (the worst phase: it has
// just fetched when the node starts signing with the new key, so its
// refetch for the unknown kid is rate-limited). No valid token may be
// refused at any moment: promotion is refused until the cache age has
// passed, retirement until the old key's last token has expired.
func TestKeyRotationNoGap(t *testing.T) {
	dir := t.TempDir()
	clock := &simClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	node, err := tokens.OpenKeyDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	const reload = 10 * time.Second // the default key-reload
	const ttl = time.Hour           // the longest admission_ttl_seconds
	iss := tokens.NewIssuer(node, tokens.IssuerConfig{})
	srv := httptest.NewServer(&cdnJWKS{clock: clock, keys: node})
	defer srv.Close()
	v, err := client.NewVerifier(client.VerifierConfig{JWKSURL: srv.URL, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := v.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := keys(append(args, "-signing-keys", dir), func(string) string { return "" }, clock.Now, &out, &errOut)
		return out.String() + errOut.String(), err
	}

	type issued struct {
		raw string
		exp time.Time
		kid string
	}
	var kept []issued // one token a minute, checked again every minute until it expires
	oldKid := node.Active()
	var rotatedAt, promotedAt, retiredAt time.Time
	promoteRefused, retireRefused := 0, 0
	start := clock.Now()
	for step := 0; step < 3*3600; step++ {
		now := clock.Now()
		elapsed := now.Sub(start)
		if elapsed%reload == reload-time.Second {
			if err := v.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if elapsed%reload == 0 {
			if err := node.Reload(); err != nil {
				t.Fatal(err)
			}
		}
		switch {
		case elapsed == 2*time.Second:
			if out, err := run("rotate"); err != nil {
				t.Fatalf("keys rotate: %v\n%s", err, out)
			}
			rotatedAt = now
		case !rotatedAt.IsZero() && promotedAt.IsZero() && elapsed%(7*time.Second) == 0:
			out, err := run("promote")
			if err != nil {
				if !strings.Contains(out+err.Error(), "time left") {
					t.Fatalf("keys promote refused without naming the time left: %v\n%s", err, out)
				}
				promoteRefused++
				break
			}
			promotedAt = now
		case !promotedAt.IsZero() && retiredAt.IsZero() && elapsed%time.Minute == 0:
			out, err := run("retire")
			if err != nil {
				if !strings.Contains(out+err.Error(), "time left") {
					t.Fatalf("keys retire refused without naming the time left: %v\n%s", err, out)
				}
				retireRefused++
				break
			}
			if !strings.Contains(out, "retired "+oldKid) {
				t.Fatalf("keys retire printed %q, want it to retire %s", out, oldKid)
			}
			retiredAt = now
		}

		raw, adm, err := iss.Issue("sale", "u", int64(step+1), ttl, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(ctx, raw, "sale"); err != nil {
			t.Fatalf("at +%v a token issued now (kid %s) was refused: %v", elapsed, kidOfToken(raw), err)
		}
		if elapsed%time.Minute == 0 {
			for _, k := range kept {
				if !now.Before(k.exp) {
					continue
				}
				if _, err := v.Verify(ctx, k.raw, "sale"); err != nil {
					t.Fatalf("at +%v a token valid until %v (kid %s) was refused: %v", elapsed, k.exp.Sub(start), k.kid, err)
				}
			}
			kept = append(kept, issued{raw: raw, exp: adm.ExpiresAt, kid: kidOfToken(raw)})
		}
		clock.Step(time.Second)
	}
	if promotedAt.IsZero() || retiredAt.IsZero() {
		t.Fatalf("rotation not finished: promoted at %v, retired at %v", promotedAt, retiredAt)
	}
	if promoteRefused == 0 || retireRefused == 0 {
		t.Errorf("promote refused %d times, retire %d times; want both refused before their time", promoteRefused, retireRefused)
	}
	if wait := promotedAt.Sub(rotatedAt); wait < web.JWKSMaxAge+reload {
		t.Errorf("promoted %v after rotate, want at least the JWKS max-age %v + key reload %v", wait, web.JWKSMaxAge, reload)
	}
	// The old key's last token, presented after it expired: refused.
	var last issued
	for _, k := range kept {
		if k.kid == oldKid {
			last = k
		}
	}
	if last.raw == "" {
		t.Fatal("no token of the old key kept")
	}
	if _, err := v.Verify(ctx, last.raw, "sale"); !errors.Is(err, tokens.ErrInvalid) {
		t.Errorf("a retired key's token after its expiry: %v, want ErrInvalid", err)
	}
	if node.Active() == oldKid || len(node.Kids()) != 1 {
		t.Errorf("after the rotation: active %s, kids %v; want one new key", node.Active(), node.Kids())
	}
}

// kidOfToken reads the kid of a token's header, for messages.
func kidOfToken(raw string) string {
	h, _, _ := strings.Cut(raw, ".")
	b, _ := base64.RawURLEncoding.DecodeString(h)
	var head struct {
		Kid string `json:"kid"`
	}
	_ = json.Unmarshal(b, &head)
	return head.Kid
}
