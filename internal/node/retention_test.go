package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/pushstub"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/push"
	"github.com/anteroom/anteroom/retention"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web/protect"
	"github.com/redis/go-redis/v9"
)

// nonPersonal are the key suffixes (after a sale's hash tag) that hold no
// one's identifier and may live without an expiry: written out here, not
// taken from package retention, so a new per-person key the sweep does
// not cover fails TestPersonalKeysExpire instead of joining a list.
var nonPersonal = map[string]bool{
	"cfg": true, "page": true, "seq": true, "fence": true, "sf": true, "sec": true, "w": true,
	"adm": true, "hist": true, "health": true, "etas": true, "tally": true, "refused": true, "passcount": true,
	"lc": true, "lc:recent": true, "stock": true, "stats": true, "gen": true, "frozen": true, "xfer": true, "parked": true, "xin": true,
	// indexed by queue position: no one's once the user buckets are gone
	"present": true, "claimbits": true, "claimed": true, "fin": true, "act": true, "late": true, "readmit": true, "heldlog": true,
}

// TestPersonalKeysExpire runs a whole sale through a node on a real
// redis-server with every feature that writes a per-person key (join
// shards, a lane, max_active sessions, a pass, a push subscription,
// claims with device and payment signals and idempotency keys, a
// release), lets it end, and then finds every key of the sale: each one
// not known to be aggregate must expire, and no later than the sale's end
// plus the node's retention (2h here, shorter than the claims' 24h
// idempotency keys, which the sweep must shorten).
func TestPersonalKeysExpire(t *testing.T) {
	r := testenv.StartRedis(t)
	personalSale(t, node.Config{RedisURL: r.URL()}, r.Client(t))
}

// TestPersonalKeysExpireOnCluster is TestPersonalKeysExpire on a Redis
// Cluster: the sweep walks every master.
func TestPersonalKeysExpireOnCluster(t *testing.T) {
	c := testenv.StartRedisCluster(t, 3)
	personalSale(t, node.Config{RedisClusterAddrs: c.Addrs()}, c.Client(t))
}

func personalSale(t *testing.T, cfg node.Config, rdb redis.UniversalClient) {
	ns := testenv.StartNATS(t)
	keyFile := filepath.Join(t.TempDir(), "vapid.key")
	key, err := push.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const retain = 2 * time.Hour
	cfg.NATSURL, cfg.Retention, cfg.RetentionEvery = ns.URL(), retain, 100*time.Millisecond
	cfg.PushVAPIDKey, cfg.PushSubject, cfg.PushHosts, cfg.PushAllowHTTP = keyFile, "mailto:ops@shop.example", []string{"127.0.0.1"}, true
	n := nodetest.Start(t, nodetest.HeaderMode(cfg))

	const ev = "personal"
	sale := openSale(10, 2, 0, 0, 1000)
	end := time.Now().UTC().Truncate(time.Second).Add(8 * time.Second)
	sale["ends_at"] = end
	sale["max_active"] = 50
	sale["lanes"] = []any{map[string]any{"name": "members", "share": 0.5}}
	sale["signals"] = map[string]any{"device": map[string]any{"source": "proxy_header"}, "payment": map[string]any{"source": "signed_header"}}
	sale["limits"] = map[string]any{"signal_claims": map[string]any{"device": 1, "payment": 1}}
	sale["shop"] = map[string]any{"secret": shopSecret}
	nodetest.CreateSale(t, n, ev, sale)
	base := n.URL() + "/events/" + ev
	// Join shards (lanes need one shard: another sale).
	const sharded = "personal-sharded"
	other := openSale(10, 1, 0, 0, 1000)
	other["ends_at"], other["join_shards"] = end, 2
	nodetest.CreateSale(t, n, sharded, other)
	for _, u := range []string{"sam", "sue", "syd"} {
		nodetest.AdmitUser(t, n, sharded, u)
	}

	// A pass, redeemed by pat.
	op := map[string]string{"Authorization": "Bearer " + staffKey(t, n, "olga", "operator")}
	m := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/"+ev+"/passes", op, []byte(`{"uses":2}`))
	if m.Status != http.StatusCreated && m.Status != http.StatusOK {
		t.Fatalf("mint a pass: %d %s", m.Status, m.Raw)
	}
	if a := join(t, n, ev, map[string]string{"X-User-ID": "pat", tokens.PassHeader: nodetest.Str(m.Body, "pass")}); a.Status != http.StatusOK {
		t.Fatalf("redeem the pass: %d %s", a.Status, a.Raw)
	}
	// A push subscription of ann's ticket.
	pub := nodetest.Call(t, http.MethodGet, base+"/push", nil, nil)
	stub, err := pushstub.Start(nodetest.Str(pub.Body, "public_key"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stub.Close)
	j := join(t, n, ev, map[string]string{"X-User-ID": "ann"})
	body, _ := json.Marshal(stub.Subscription())
	if a := nodetest.Call(t, http.MethodPost, base+"/push", map[string]string{"Authorization": "Bearer " + nodetest.Str(j.Body, "ticket"), "Content-Type": "application/json"}, body); a.Status/100 != 2 {
		t.Fatalf("subscribe: %d %s", a.Status, a.Raw)
	}
	// Claims with signals and idempotency keys, one released, one refused
	// (a shared card), and a lookup.
	for i, u := range []string{"alice", "bob", "carol"} {
		tok := nodetest.AdmitUser(t, n, ev, u)
		hdr := map[string]string{"Authorization": "Bearer " + tok, "X-User-ID": u, "Idempotency-Key": "k-" + u,
			protect.DeviceHeader:  "phone-" + u,
			protect.PaymentHeader: protect.SignSignal(shopSecret, time.Now(), ev, u, "payment", []string{"fp-1", "fp-2", "fp-1"}[i])}
		a := nodetest.Call(t, http.MethodPost, base+"/claim", hdr, nil)
		want := []int{201, 201, 409}[i]
		if a.Status != want {
			t.Fatalf("%s claims: %d %s, want %d", u, a.Status, a.Raw, want)
		}
		if u == "bob" {
			id := nodetest.Str(a.Body, "claim_id")
			if l := nodetest.Call(t, http.MethodGet, base+"/claims/"+id, hdr, nil); l.Status != 200 {
				t.Fatalf("look the claim up: %d %s", l.Status, l.Raw)
			}
			if rl := nodetest.Call(t, http.MethodPost, base+"/claims/"+id+"/release", hdr, nil); rl.Status != 200 {
				t.Fatalf("release: %d %s", rl.Status, rl.Raw)
			}
		}
	}

	// After the end, each per-person key must come to expire by end+2h.
	var bad []string
	deadline := end.Add(nodetest.Patience)
	for {
		bad = append(personalKeysAlive(t, rdb, ev, end.Add(retain)), personalKeysAlive(t, rdb, sharded, end.Add(retain))...)
		if len(bad) == 0 && time.Now().After(end.Add(time.Second)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(bad) > 0 {
		t.Fatalf("per-person keys that outlive their sale's end + %v:\n%s", retain, strings.Join(bad, "\n"))
	}
}

// personalKeysAlive scans every key of sale ev on every master of rdb and
// lists those not in nonPersonal that have no expiry or one after until,
// with their expiry.
func personalKeysAlive(t *testing.T, rdb redis.UniversalClient, ev string, until time.Time) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), nodetest.Patience)
	defer cancel()
	var bad []string
	check := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, "ar:{"+ev+"[}.#]*", 1000).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			if nonPersonal[retention.Suffix(k[strings.Index(k, "}:")+2:])] {
				continue
			}
			ms, err := c.Do(ctx, "PEXPIRETIME", k).Int64()
			if err != nil {
				return err
			}
			if ms < 0 || time.UnixMilli(ms).After(until) {
				at := "never"
				if ms >= 0 {
					at = time.UnixMilli(ms).UTC().Format(time.RFC3339)
				}
				bad = append(bad, k+" expires "+at)
			}
		}
		return iter.Err()
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		var mu = make(chan struct{}, 1)
		err = c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			mu <- struct{}{}
			defer func() { <-mu }()
			return check(ctx, m)
		})
	case *redis.Client:
		err = check(ctx, c)
	}
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(bad)
	return bad
}
