package node_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/web"
)

// TestKeyRotationEndToEnd rotates and retires the signing keys of a
// running node with the `anteroom keys` command, as an operator would
// (rotate publishes the next key, promote -now makes it the signer, retire
// is refused while the old key's tokens may be valid): a
// token signed before the rotation keeps working until its key is retired,
// the JWKS lists both keys in between, and after retirement the old key
// is gone and its tokens are refused with 401 without touching the stock.
func TestKeyRotationEndToEnd(t *testing.T) {
	bin := buildAnteroom(t)
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	keyDir := t.TempDir()
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), SigningKeys: keyDir, KeyReload: 50 * time.Millisecond}))
	nodetest.CreateSale(t, n, "rot", openSale(10, 1, 0, 0, 1000))
	claimURL := n.URL() + "/events/rot/claim"
	claimWith := func(token string) nodetest.Answer {
		return nodetest.Call(t, http.MethodPost, claimURL, map[string]string{"X-User-ID": nodetest.Str(payloadOf(t, token), "sub"), "Authorization": "Bearer " + token}, nil)
	}

	before := jwksOf(t, n)
	if len(before) != 1 {
		t.Fatalf("JWKS before rotation: %v, want one key", before)
	}
	oldKid := before[0]
	alice := nodetest.AdmitUser(t, n, "rot", "alice")
	carol := nodetest.AdmitUser(t, n, "rot", "carol")
	if kidOf(t, alice) != oldKid {
		t.Fatalf("alice's token kid %s, want %s", kidOf(t, alice), oldKid)
	}

	// The JWKS advertises the cache age `keys promote` waits for.
	jw := nodetest.Call(t, http.MethodGet, n.URL()+web.JWKSPath, nil, nil)
	if cc, want := jw.Header.Get("Cache-Control"), fmt.Sprintf("public, max-age=%d", int(web.JWKSMaxAge/time.Second)); cc != want {
		t.Errorf("JWKS Cache-Control %q, want %q (web.JWKSMaxAge)", cc, want)
	}

	// Stage 1: the next key is published; the node keeps signing with
	// the old one.
	out := anteroomCmd(t, bin, "keys", "rotate", "-signing-keys", keyDir)
	newKid, _, _ := strings.Cut(strings.TrimPrefix(out, "next "), "\n")
	if len(newKid) != 43 || newKid == oldKid || !strings.Contains(out, "keep signing with "+oldKid) || !strings.Contains(out, "promote it from ") {
		t.Fatalf("keys rotate printed %q", out)
	}
	nodetest.WaitFor(t, "the node to publish the next key", 5*time.Second, func() bool {
		return slices.Equal(jwksOf(t, n), []string{oldKid, newKid})
	})
	if dave := nodetest.AdmitUser(t, n, "rot", "dave"); kidOf(t, dave) != oldKid {
		t.Errorf("a token signed while the next key is published has kid %s, want the active %s", kidOf(t, dave), oldKid)
	}
	list := anteroomCmd(t, bin, "keys", "list", "-signing-keys", keyDir)
	if !strings.Contains(list, oldKid+"  active") || !strings.Contains(list, newKid+"  next") {
		t.Errorf("keys list:\n%s", list)
	}
	// Stage 2 is refused before the JWKS cache age has passed, naming
	// the time left; -now (a leaked key) promotes at once.
	if out := anteroomFails(t, bin, "keys", "promote", "-signing-keys", keyDir); !strings.Contains(out, "time left") {
		t.Errorf("keys promote right after rotate: %q, want a refusal naming the time left", out)
	}
	if out := anteroomFails(t, bin, "keys", "rotate", "-signing-keys", keyDir); !strings.Contains(out, "already published") {
		t.Errorf("keys rotate with a next key: %q, want a refusal", out)
	}
	out = anteroomCmd(t, bin, "keys", "promote", "-now", "-signing-keys", keyDir)
	if !strings.HasPrefix(out, "active "+newKid) || !strings.Contains(out, "retiring "+oldKid) {
		t.Fatalf("keys promote -now printed %q", out)
	}
	nodetest.WaitFor(t, "the node to reload the rotated keys", 5*time.Second, func() bool {
		return slices.Equal(jwksOf(t, n), []string{newKid, oldKid})
	})
	list = anteroomCmd(t, bin, "keys", "list", "-signing-keys", keyDir)
	if !strings.Contains(list, newKid+"  active") || !strings.Contains(list, oldKid+"  retiring") {
		t.Errorf("keys list:\n%s", list)
	}

	// Signed before the rotation, presented after: accepted.
	if a := claimWith(alice); a.Status != http.StatusCreated {
		t.Fatalf("claim with a pre-rotation token: %d %s", a.Status, a.Raw)
	}
	bob := nodetest.AdmitUser(t, n, "rot", "bob")
	if kidOf(t, bob) != newKid {
		t.Errorf("bob's token kid %s, want the new key %s", kidOf(t, bob), newKid)
	}

	// Mistakes an operator can make are refused and change nothing.
	for _, args := range [][]string{
		{"keys", "retire", "-signing-keys", keyDir, "-max-age", "-1s"},
		{"keys", "promote", "-signing-keys", keyDir},
		{"keys", "list", "-signing-keys", keyDir + "-typo"},
		{"keys", "retire", "-signing-keys", keyDir + "-typo", "-max-age", "1ms"},
		{"keys", "rotate", "-signing-keys", keyDir, "extra"},
		{"keys", "turn"},
		{"keys"},
	} {
		if out := anteroomFails(t, bin, args...); !strings.Contains(out, "anteroom:") {
			t.Errorf("anteroom %s: %q, want an error message", strings.Join(args, " "), out)
		}
	}
	if kids := jwksOf(t, n); !slices.Equal(kids, []string{newKid, oldKid}) {
		t.Fatalf("JWKS after refused commands: %v", kids)
	}

	// A max-age covering the tokens keeps the old key: refused, naming
	// the time left; so is the default (the longest admission TTL).
	for _, args := range [][]string{
		{"keys", "retire", "-signing-keys", keyDir, "-max-age", "1h"},
		{"keys", "retire", "-signing-keys", keyDir},
	} {
		if out := anteroomFails(t, bin, args...); !strings.Contains(out, oldKid+" may still have valid tokens") || !strings.Contains(out, "time left") {
			t.Errorf("anteroom %s: %q, want a refusal naming the time left", strings.Join(args, " "), out)
		}
	}
	// A tiny one removes it (tests only: in production the max-age is at
	// least the longest admission TTL + reload interval + leeway).
	out = anteroomCmd(t, bin, "keys", "retire", "-signing-keys", keyDir, "-max-age", "1ms")
	if !strings.Contains(out, "retired "+oldKid) {
		t.Fatalf("keys retire -max-age 1ms printed %q", out)
	}
	nodetest.WaitFor(t, "the node to drop the retired key", 5*time.Second, func() bool {
		return slices.Equal(jwksOf(t, n), []string{newKid})
	})

	ctx := context.Background()
	before1, err := n.Claims.Totals(ctx, claim.Sale{ID: "rot", Buckets: 1})
	if err != nil {
		t.Fatal(err)
	}
	problemOK(t, claimWith(carol), http.StatusUnauthorized, "unauthenticated")
	problemOK(t, claimWith(alice), http.StatusUnauthorized, "unauthenticated") // not even a replay
	after, err := n.Claims.Totals(ctx, claim.Sale{ID: "rot", Buckets: 1})
	if err != nil {
		t.Fatal(err)
	}
	if after.Granted != before1.Granted || after.Remaining != before1.Remaining || after.Granted != 1 {
		t.Errorf("stock after refused tokens: granted %d remaining %d, want %d and %d with 1 granted", after.Granted, after.Remaining, before1.Granted, before1.Remaining)
	}
	if a := claimWith(bob); a.Status != http.StatusCreated {
		t.Errorf("claim with a post-rotation token: %d %s", a.Status, a.Raw)
	}
}
