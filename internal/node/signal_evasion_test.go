package node_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/golang-jwt/jwt/v5"
)

// TestFreshDeviceIDEvadesNoDeviceLimit is the attack issue 36 reproduced:
// a ring of five users on one phone, each claim sent with a fresh
// X-Device-ID of the client's own choosing. one_claim_per_device used to
// believe that header (whatever the gateway passed on), so every claim
// was granted. A device limit now needs a trusted source for the device
// signal: without one the save is refused 400 naming it, and with a
// signed source a bare header is refused 401 and counts nothing.
func TestFreshDeviceIDEvadesNoDeviceLimit(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	ring := []string{"r1", "r2", "r3", "r4", "r5"}

	claimRing := func(ev string) (grants int, answers []string) {
		for i, u := range ring {
			tok := nodetest.AdmitUser(t, n, ev, u)
			a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/"+ev+"/claim", map[string]string{
				"Authorization": "Bearer " + tok, "X-User-ID": u, "Idempotency-Key": "k", "X-Device-ID": fmt.Sprintf("fresh-%d", i),
			}, nil)
			if a.Status == http.StatusCreated {
				grants++
			}
			answers = append(answers, fmt.Sprintf("%d %s", a.Status, nodetest.Str(a.Body, "code")))
		}
		return grants, answers
	}

	raw, _ := json.Marshal(limited(map[string]any{"one_claim_per_device": true}))
	save := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/bare", admin, raw)
	if save.Status == http.StatusCreated {
		grants, answers := claimRing("bare")
		t.Fatalf("five users on one phone, a fresh X-Device-ID per claim: %d grants (%v), want the sale refused at save (no trusted device source)", grants, answers)
	}
	if save.Status != http.StatusBadRequest || !strings.Contains(nodetest.Str(save.Body, "detail"), "device") {
		t.Fatalf("a device limit without a trusted source: %d %s, want 400 naming the device signal", save.Status, save.Raw)
	}

	// A header-mode node reads no token claims: a jwt_claim source is
	// refused at save.
	raw, _ = json.Marshal(map[string]any{"signals": map[string]any{"device": map[string]any{"source": "jwt_claim", "claim": "d"}}})
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/bare", admin, append(raw[:len(raw)-1:len(raw)-1], []byte(`,"supply":10,"starts_at":"2030-01-01T00:00:00Z"}`)...)); a.Status != http.StatusBadRequest ||
		!strings.Contains(nodetest.Str(a.Body, "detail"), "signals.device: source jwt_claim, but this node's identity mode reads no token claims") {
		t.Fatalf("a token claim source on a header-mode node: %d %s, want 400 naming signals.device", a.Status, a.Raw)
	}

	signed := limited(map[string]any{"one_claim_per_device": true})
	signed["shop"] = map[string]any{"secret": shopSecret}
	signed["signals"] = map[string]any{"device": map[string]any{"source": "signed_header"}}
	nodetest.CreateSale(t, n, "signed", signed)
	grants, answers := claimRing("signed")
	if grants != 0 {
		t.Fatalf("five users on one phone, a fresh unsigned X-Device-ID per claim: %d grants (%v), want none", grants, answers)
	}
	for _, a := range answers {
		if a != "401 unauthenticated" && a != "401 bad_signal" {
			t.Fatalf("unsigned device signals answered %v, want 401 each", answers)
		}
	}
}

// TestSharedCardOneGrant: ten users sharing one payment fingerprint (from
// the gateway) send two claims each at once, in a sale allowing one claim
// per payment and two per user: exactly one is granted and the other 19
// are 409 signal_limit naming payment, on one Redis and on a Redis
// Cluster (the signal's set lives in the bucket's slot).
func TestSharedCardOneGrant(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "redis-server", true: "redis-cluster"}[cluster], func(t *testing.T) {
			cfg := node.Config{NATSURL: testenv.StartNATS(t).URL()}
			if cluster {
				cfg.RedisClusterAddrs = testenv.StartRedisCluster(t, 3).Addrs()
			} else {
				cfg.RedisURL = testenv.StartRedis(t).URL()
			}
			n := nodetest.Start(t, nodetest.HeaderMode(cfg))
			sale := openSale(100, 2, 0, 0, 1000)
			sale["signals"] = map[string]any{"payment": map[string]any{"source": "proxy_header"}}
			sale["limits"] = map[string]any{"signal_claims": map[string]any{"payment": 1}}
			nodetest.CreateSale(t, n, "ring", sale)
			tokens := map[string]string{}
			for u := range 10 {
				user := fmt.Sprint("ring-", u)
				tokens[user] = nodetest.AdmitUser(t, n, "ring", user)
			}
			var mu sync.Mutex
			answers := map[string]int{}
			var wg sync.WaitGroup
			for user, tok := range tokens {
				for k := range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/ring/claim", map[string]string{
							"Authorization": "Bearer " + tok, "X-User-ID": user, "Idempotency-Key": fmt.Sprint("k", k),
							"X-Payment-Fingerprint": "shared-card",
						}, nil)
						mu.Lock()
						defer mu.Unlock()
						answers[fmt.Sprintf("%d %s %s", a.Status, nodetest.Str(a.Body, "code"), nodetest.Str(a.Body, "signal"))]++
					}()
				}
			}
			wg.Wait()
			if answers["201  "] != 1 || answers["409 signal_limit payment"] != 19 {
				t.Fatalf("20 claims sharing one card: %v, want one 201 and 19 409 signal_limit payment", answers)
			}
		})
	}
}

// TestDeviceFromTokenClaim: in jwt identity mode a sale reads the device
// from the shop's token (claim device_id): a second user whose token
// names the same device is 409 signal_limit, whatever X-Device-ID they
// send, and a token without the claim is 400.
func TestDeviceFromTokenClaim(t *testing.T) {
	s := newShop(t)
	cfg := node.Config{RedisURL: testenv.StartRedis(t).URL(), NATSURL: testenv.StartNATS(t).URL()}
	cfg.Identity, cfg.UserJWKS, cfg.UserIssuer, cfg.UserAudience = "jwt", s.file, "https://shop.example", "anteroom"
	n := nodetest.Start(t, cfg)
	sale := openSale(100, 1, 0, 0, 1000)
	sale["signals"] = map[string]any{"device": map[string]any{"source": "jwt_claim", "claim": "device_id"}}
	sale["limits"] = map[string]any{"signal_claims": map[string]any{"device": 1}}
	nodetest.CreateSale(t, n, "app", sale)
	// A jwt node that trusts no proxy refuses a proxy source at save.
	proxied := openSale(100, 1, 0, 0, 1000)
	proxied["signals"] = map[string]any{"payment": map[string]any{"source": "proxy_header"}}
	raw, _ := json.Marshal(proxied)
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/proxied", map[string]string{"Authorization": "Bearer " + n.AdminToken}, raw); a.Status != http.StatusBadRequest ||
		!strings.Contains(nodetest.Str(a.Body, "detail"), "signals.payment: source proxy_header, but this node trusts no proxy") {
		t.Fatalf("a proxy source on a node without trusted proxies: %d %s, want 400 naming signals.payment", a.Status, a.Raw)
	}
	claimAs := func(user string, extra jwt.MapClaims, hdr map[string]string) nodetest.Answer {
		who := map[string]string{"X-User-Token": sign(t, jwt.SigningMethodES256, s.ec, "ec-1", userClaims(user, extra))}
		tok, _ := nodetest.Admit(t, n, "app", who)
		h := map[string]string{"Authorization": "Bearer " + tok, "X-User-Token": who["X-User-Token"]}
		for k, v := range hdr {
			h[k] = v
		}
		return nodetest.Call(t, http.MethodPost, n.URL()+"/events/app/claim", h, nil)
	}
	if a := claimAs("alice", jwt.MapClaims{"device_id": "dev-A"}, nil); a.Status != http.StatusCreated {
		t.Fatalf("alice: %d %s", a.Status, a.Raw)
	}
	if a := claimAs("bob", jwt.MapClaims{"device_id": "dev-A"}, map[string]string{"X-Device-ID": "fresh-1"}); a.Status != http.StatusConflict ||
		nodetest.Str(a.Body, "code") != "signal_limit" || nodetest.Str(a.Body, "signal") != "device" {
		t.Fatalf("bob on alice's device with a fresh X-Device-ID: %d %s, want 409 signal_limit device", a.Status, a.Raw)
	}
	if a := claimAs("carol", nil, map[string]string{"X-Device-ID": "fresh-2"}); a.Status != http.StatusBadRequest {
		t.Fatalf("carol's token without device_id: %d %s, want 400", a.Status, a.Raw)
	}
	if a := claimAs("dave", jwt.MapClaims{"device_id": "dev-D"}, nil); a.Status != http.StatusCreated {
		t.Fatalf("dave on his own device: %d %s", a.Status, a.Raw)
	}
}
