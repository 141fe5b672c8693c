package client_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anteroom/anteroom/client"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/golang-jwt/jwt/v5"
)

// startNode starts a node on real Redis and NATS with cfg.
func startNode(t *testing.T, cfg node.Config) *node.Node {
	t.Helper()
	cfg.RedisURL = testenv.StartRedis(t).URL()
	cfg.NATSURL = testenv.StartNATS(t).URL()
	return nodetest.Start(t, cfg)
}

// openSale is a sale open now: supply units, limit per user, admitting
// rate a second.
func openSale(supply, limit int, rate float64) map[string]any {
	now := time.Now().UTC().Truncate(time.Second)
	return map[string]any{
		"name": "client test", "supply": supply, "per_user_limit": limit,
		"prequeue_opens_at": now.Add(-time.Second), "starts_at": now,
		"ends_at": now.Add(time.Hour), "admit_rate_per_second": rate,
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), nodetest.Patience)
	t.Cleanup(cancel)
	return ctx
}

// TestWholeSale runs a sale through the client in each identity mode the
// node can be in: join, wait for the turn, claim, see the claim in my
// claims, release it, and see the unit back.
func TestWholeSale(t *testing.T) {
	shop := newShop(t)
	for _, mode := range []string{"anonymous", "header", "jwt"} {
		t.Run(mode, func(t *testing.T) {
			cfg := node.Config{}
			var opts, otherOpts []client.Option
			switch mode {
			case "header":
				cfg = nodetest.HeaderMode(cfg)
				opts = []client.Option{client.WithUser("", "alice")}
				otherOpts = []client.Option{client.WithUser("", "mallory")}
			case "jwt":
				cfg.Identity, cfg.UserJWKS, cfg.UserIssuer, cfg.UserAudience = "jwt", shop.jwks, shopIssuer, shopAudience
				opts = []client.Option{client.WithUserToken("", shop.token(t, "alice"))}
				otherOpts = []client.Option{client.WithUserToken("", shop.token(t, "mallory"))}
			}
			n := startNode(t, cfg)
			nodetest.CreateSale(t, n, "drop", openSale(2, 1, 50))
			c, err := client.New(n.URL(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			if c.Anonymous() != (mode == "anonymous") {
				t.Fatalf("Anonymous() = %v in %s mode", c.Anonymous(), mode)
			}
			ctx := ctxFor(t)
			tk, err := c.Join(ctx, "drop")
			if err != nil {
				t.Fatalf("join: %v", err)
			}
			if tk.Ticket == "" || tk.Seq < 1 || tk.PollAfter <= 0 {
				t.Fatalf("join answered %+v", tk)
			}
			again, err := c.Join(ctx, "drop")
			if err != nil || again.Ticket != tk.Ticket {
				t.Fatalf("repeated join: %+v %v, want the same ticket %s", again, err, tk.Ticket)
			}
			if mode == "anonymous" { // the ticket cookie stands for the ticket
				if s, err := c.Status(ctx, "drop", ""); err != nil || s.State == "" {
					t.Fatalf("status by the ticket cookie: %+v %v", s, err)
				}
			}
			polls := 0
			s, err := c.Wait(ctx, "drop", tk.Ticket, func(client.Status) { polls++ })
			if err != nil {
				t.Fatalf("wait: %v", err)
			}
			if s.State != client.StateAdmitted || s.AdmissionToken == "" || s.AdmissionExpiresAt.IsZero() || polls < 1 {
				t.Fatalf("wait ended with %+v after %d polls, want admitted with a token", s, polls)
			}
			cl, err := c.Claim(ctx, "drop", s.AdmissionToken, "")
			if err != nil {
				t.Fatalf("claim: %v", err)
			}
			if cl.ID == "" || cl.Status != "pending" || !cl.Created {
				t.Fatalf("claim answered %+v, want a new pending claim", cl)
			}
			// A second claim under another key is the per-user limit, with
			// the claim held named.
			_, err = c.Claim(ctx, "drop", s.AdmissionToken, "")
			var e *client.Error
			if !errors.Is(err, client.ErrLimitReached) || !errors.As(err, &e) || e.Status != 409 || len(e.ClaimIDs) != 1 || e.ClaimIDs[0] != cl.ID {
				t.Fatalf("second claim: %v (%+v), want 409 limit_reached naming %s", err, e, cl.ID)
			}
			mine, err := c.Claims(ctx, "drop")
			if err != nil || len(mine) != 1 || mine[0].ID != cl.ID || mine[0].Event != "drop" || mine[0].Position < 1 || mine[0].ClaimedAt.IsZero() {
				t.Fatalf("my claims: %+v %v, want the one claim %s", mine, err, cl.ID)
			}
			// Another caller can neither spend the admission nor release the
			// claim.
			other, err := client.New(n.URL(), otherOpts...)
			if err != nil {
				t.Fatal(err)
			}
			want := client.ErrNotFound
			if mode == "anonymous" { // no visitor cookie: nobody
				want = client.ErrUnauthenticated
			}
			if _, err := other.Release(ctx, "drop", cl.ID); !errors.Is(err, want) {
				t.Errorf("another caller's release: %v, want %s", err, want)
			}
			if _, err := other.Claim(ctx, "drop", s.AdmissionToken, ""); !errors.Is(err, client.ErrForbidden) && !errors.Is(err, client.ErrUnauthenticated) {
				t.Errorf("another caller's claim with the admission: %v, want forbidden or unauthenticated", err)
			}
			rel, err := c.Release(ctx, "drop", cl.ID)
			if err != nil || rel.ID != cl.ID || rel.Status != "released" {
				t.Fatalf("release: %+v %v", rel, err)
			}
			if rel2, err := c.Release(ctx, "drop", cl.ID); err != nil || rel2.Status != "released" {
				t.Fatalf("release again: %+v %v, want the same answer", rel2, err)
			}
		})
	}
}

// The shop's user tokens in jwt mode.
const (
	shopIssuer   = "https://shop.example"
	shopAudience = "anteroom"
)

// shop signs user tokens with an Ed25519 key published in a JWKS file.
type shop struct {
	key  ed25519.PrivateKey
	jwks string // the file
}

func newShop(t *testing.T) *shop {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	set := fmt.Sprintf(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":%q,"kid":"shop-1","alg":"EdDSA","use":"sig"}]}`, base64.RawURLEncoding.EncodeToString(pub))
	file := filepath.Join(t.TempDir(), "shop.jwks")
	if err := os.WriteFile(file, []byte(set), 0o600); err != nil {
		t.Fatal(err)
	}
	return &shop{key: priv, jwks: file}
}

// token is user's token, valid for ten minutes.
func (s *shop) token(t *testing.T, user string) string {
	t.Helper()
	now := time.Now()
	j := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
		"iss": shopIssuer, "aud": shopAudience, "sub": user, "iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(),
	})
	j.Header["kid"] = "shop-1"
	tok, err := j.SignedString(s.key)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
