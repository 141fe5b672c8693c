package device_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/attest/appattest"
	"github.com/anteroom/anteroom/attest/attesttest"
	"github.com/anteroom/anteroom/attest/device"
	"github.com/anteroom/anteroom/attest/playintegrity"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/redis/go-redis/v9"
)

const (
	appID   = "ABCDE12345.com.example.shop"
	pkgName = "com.example.shop"
)

var secret = []byte("the node's edge secret, 32 bytes or more")

// rig is a Service over a real Redis (or Cluster), trusting a test CA and
// Play keys, and a sale with both apps.
type rig struct {
	svc  *device.Service
	rdb  redis.UniversalClient
	ca   *attesttest.AppleCA
	play *attesttest.Play
	sale *event.Config
}

func newRig(t testing.TB, rdb redis.UniversalClient) *rig {
	t.Helper()
	r := &rig{rdb: rdb, ca: attesttest.NewAppleCA(t), play: attesttest.NewPlay(t)}
	var err error
	r.svc, err = device.New(rdb, device.Config{Secret: secret, AppleRoots: r.ca.Roots(),
		PlayDecryptionKey: r.play.DecryptionKey, PlayVerificationKey: r.play.VerificationKey})
	if err != nil {
		t.Fatal(err)
	}
	r.sale = &event.Config{ID: "ev", EndsAt: time.Now().Add(time.Hour), Attestation: event.Attestation{Require: true,
		Apple: &event.AppleAttestation{AppID: appID}, Google: &event.GoogleAttestation{PackageName: pkgName}}}
	return r
}

func single(t testing.TB) redis.UniversalClient { return testenv.StartRedis(t).Client(t) }

// registered returns a device whose key the rig stored.
func (r *rig) registered(t testing.TB) *attesttest.Device {
	t.Helper()
	d := attesttest.NewDevice(t)
	ch := r.svc.Challenge(r.sale.ID, time.Now())
	if _, err := r.svc.RegisterApple(context.Background(), r.sale, d.KeyID(), r.ca.Attest(t, d, appID, ch), ch); err != nil {
		t.Fatalf("register: %v", err)
	}
	return d
}

// appleReq is a claim request asserted by d with counter n.
func (r *rig) appleReq(t testing.TB, d *attesttest.Device, n uint32, body string) device.Request {
	req := device.Request{Event: r.sale.ID, Method: "POST", Path: "/events/ev/claim", Body: []byte(body),
		Challenge: r.svc.Challenge(r.sale.ID, time.Now()), KeyID: d.KeyID()}
	req.Assertion = d.Assert(t, appID, n, device.ClientData(req.Event, req.Method, req.Path, req.Challenge, req.Body))
	return req
}

func (r *rig) keys(t *testing.T) []string {
	t.Helper()
	var out []string
	scan := func(ctx context.Context, c *redis.Client) error {
		ks, err := c.Keys(ctx, "*").Result()
		out = append(out, ks...)
		return err
	}
	var err error
	if cc, ok := r.rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		err = cc.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return scan(ctx, c)
		})
	} else {
		err = scan(context.Background(), r.rdb.(*redis.Client))
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAppleFlow: a registered key's assertions pass with growing
// counters; the same assertion again (its challenge spent) and a counter
// that does not grow are refused, and a refusal writes nothing. On a
// single Redis and on a Cluster.
func TestAppleFlow(t *testing.T) {
	for name, start := range map[string]func(testing.TB) redis.UniversalClient{
		"single":  single,
		"cluster": func(t testing.TB) redis.UniversalClient { return testenv.StartRedisCluster(t, 3).Client(t) },
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, start(t))
			ctx := context.Background()
			d := r.registered(t)
			first := r.appleReq(t, d, 1, `{"a":1}`)
			p, err := r.svc.Check(ctx, r.sale, first)
			if err != nil || p.Platform != device.Apple || len(p.KeyID) != 32 {
				t.Fatalf("first assertion: %+v %v", p, err)
			}
			// Replayed after the first went through: its counter is
			// the stored one (ErrReplay); replayed at the same moment,
			// its spent challenge (TestConcurrentReplay).
			if _, err := r.svc.Check(ctx, r.sale, first); !errors.Is(err, appattest.ErrReplay) {
				t.Fatalf("replayed assertion: %v, want ErrReplay", err)
			}
			before := len(r.keys(t))
			// A fresh challenge, an old counter: refused, nothing spent.
			stale := r.appleReq(t, d, 1, `{"a":1}`)
			if _, err := r.svc.Check(ctx, r.sale, stale); !errors.Is(err, appattest.ErrReplay) {
				t.Fatalf("counter 1 again: %v, want ErrReplay", err)
			}
			if n := len(r.keys(t)); n != before {
				t.Fatalf("a refused assertion wrote %d keys", n-before)
			}
			// The same challenge with a good counter still works: the
			// refusal did not spend it.
			stale.Assertion = d.Assert(t, appID, 5, device.ClientData(stale.Event, stale.Method, stale.Path, stale.Challenge, stale.Body))
			if _, err := r.svc.Check(ctx, r.sale, stale); err != nil {
				t.Fatalf("counter 5 on the refused one's challenge: %v", err)
			}
			if _, err := r.svc.Check(ctx, r.sale, r.appleReq(t, d, 3, "")); !errors.Is(err, appattest.ErrReplay) {
				t.Fatalf("counter 3 after 5: %v, want ErrReplay", err)
			}
		})
	}
}

// TestAssertionBindsTheRequest: an assertion made for one body, path or
// challenge does not pass for another.
func TestAssertionBindsTheRequest(t *testing.T) {
	r := newRig(t, single(t))
	d := r.registered(t)
	for name, edit := range map[string]func(*device.Request){
		"body":      func(q *device.Request) { q.Body = []byte(`{"a":2}`) },
		"path":      func(q *device.Request) { q.Path = "/events/ev/join" },
		"event":     func(q *device.Request) { q.Event = "other" },
		"challenge": func(q *device.Request) { q.Challenge = r.svc.Challenge("ev", time.Now()) },
	} {
		q := r.appleReq(t, d, 1, `{"a":1}`)
		edit(&q)
		if _, err := r.svc.Check(context.Background(), r.sale, q); !errors.Is(err, appattest.ErrAttestation) {
			t.Errorf("another %s: %v, want ErrAttestation", name, err)
		}
	}
}

// TestConcurrentReplay: 20 requests carrying one assertion at once: one
// passes.
func TestConcurrentReplay(t *testing.T) {
	r := newRig(t, single(t))
	d := r.registered(t)
	q := r.appleReq(t, d, 1, "")
	var wg sync.WaitGroup
	var mu sync.Mutex
	passed := 0
	for range 20 {
		wg.Go(func() {
			if _, err := r.svc.Check(context.Background(), r.sale, q); err == nil {
				mu.Lock()
				passed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if passed != 1 {
		t.Fatalf("%d of 20 copies passed, want 1", passed)
	}
}

// TestRegisterRefused: a replayed attestation, one for another App ID, a
// forged or foreign challenge and a malformed object are refused, and
// none stores a key.
func TestRegisterRefused(t *testing.T) {
	r := newRig(t, single(t))
	ctx := context.Background()
	d := attesttest.NewDevice(t)
	ch := r.svc.Challenge("ev", time.Now())
	obj := r.ca.Attest(t, d, appID, ch)
	if _, err := r.svc.RegisterApple(ctx, r.sale, d.KeyID(), obj, ch); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.RegisterApple(ctx, r.sale, d.KeyID(), obj, ch); !errors.Is(err, device.ErrChallenge) {
		t.Fatalf("replayed attestation: %v, want ErrChallenge", err)
	}
	before := len(r.keys(t))
	d2 := attesttest.NewDevice(t)
	other := r.svc.Challenge("other", time.Now())
	ch2 := r.svc.Challenge("ev", time.Now())
	for name, tc := range map[string]struct {
		key, challenge string
		obj            []byte
		want           error
	}{
		"another app id":      {d2.KeyID(), ch2, r.ca.Attest(t, d2, "ZZZZZ99999.com.other", ch2), appattest.ErrAttestation},
		"another key id":      {d.KeyID(), ch2, r.ca.Attest(t, d2, appID, ch2), appattest.ErrAttestation},
		"another sale's":      {d2.KeyID(), other, r.ca.Attest(t, d2, appID, other), device.ErrChallenge},
		"forged challenge":    {d2.KeyID(), strings.Repeat("A", 54), r.ca.Attest(t, d2, appID, strings.Repeat("A", 54)), device.ErrChallenge},
		"expired challenge":   {d2.KeyID(), r.svc.Challenge("ev", time.Now().Add(-3*time.Minute)), nil, device.ErrChallenge},
		"short challenge":     {d2.KeyID(), "abc", nil, device.ErrMalformed},
		"malformed object":    {d2.KeyID(), ch2, []byte("not cbor"), appattest.ErrMalformed},
		"key id not base64":   {"!!", ch2, nil, device.ErrMalformed},
		"not Apple's root":    {d2.KeyID(), ch2, attesttest.NewAppleCA(t).Attest(t, d2, appID, ch2), appattest.ErrAttestation},
		"wrong challenge obj": {d2.KeyID(), ch2, r.ca.Attest(t, d2, appID, r.svc.Challenge("ev", time.Now())), appattest.ErrAttestation},
	} {
		if tc.obj == nil {
			tc.obj = r.ca.Attest(t, d2, appID, tc.challenge)
		}
		if _, err := r.svc.RegisterApple(ctx, r.sale, tc.key, tc.obj, tc.challenge); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if n := len(r.keys(t)); n != before {
		t.Fatalf("refused attestations wrote %d keys", n-before)
	}
}

// TestPlayIntegrity: a token bound to the request passes once; a replay,
// another request's token, another package and a weak device are refused
// without spending the challenge.
func TestPlayIntegrity(t *testing.T) {
	r := newRig(t, single(t))
	ctx := context.Background()
	req := func() device.Request {
		return device.Request{Event: "ev", Method: "POST", Path: "/events/ev/join", Challenge: r.svc.Challenge("ev", time.Now())}
	}
	hash := func(q device.Request) string {
		return device.RequestHash(q.Event, q.Method, q.Path, q.Challenge, q.Body)
	}
	q := req()
	q.Integrity = r.play.Token(t, attesttest.Verdict{PackageName: pkgName, RequestHash: hash(q)})
	if p, err := r.svc.Check(ctx, r.sale, q); err != nil || p.Platform != device.Google || p.KeyID != nil {
		t.Fatalf("genuine token: %+v %v", p, err)
	}
	if _, err := r.svc.Check(ctx, r.sale, q); !errors.Is(err, device.ErrChallenge) {
		t.Fatalf("replayed token: %v, want ErrChallenge", err)
	}
	q = req()
	for name, v := range map[string]attesttest.Verdict{
		"another request": {PackageName: pkgName, RequestHash: strings.Repeat("0", 64)},
		"another package": {PackageName: "com.other.app", RequestHash: hash(q)},
		"basic device":    {PackageName: pkgName, RequestHash: hash(q), Device: []string{"MEETS_BASIC_INTEGRITY"}},
		"stale":           {PackageName: pkgName, RequestHash: hash(q), Issued: time.Now().Add(-10 * time.Minute)},
	} {
		q.Integrity = r.play.Token(t, v)
		if _, err := r.svc.Check(ctx, r.sale, q); !errors.Is(err, playintegrity.ErrAttestation) {
			t.Errorf("%s: %v, want ErrAttestation", name, err)
		}
	}
	q.Integrity = "not.a.token"
	if _, err := r.svc.Check(ctx, r.sale, q); !errors.Is(err, playintegrity.ErrMalformed) {
		t.Errorf("malformed token: %v", err)
	}
	// None of the refusals spent q's challenge.
	q.Integrity = r.play.Token(t, attesttest.Verdict{PackageName: pkgName, RequestHash: hash(q)})
	if _, err := r.svc.Check(ctx, r.sale, q); err != nil {
		t.Fatalf("genuine token after refusals: %v", err)
	}
}

// TestCheckNeedsEvidence: no headers is ErrRequired; both platforms, a
// challenge alone or a missing challenge are malformed.
func TestCheckNeedsEvidence(t *testing.T) {
	r := newRig(t, single(t))
	ch := r.svc.Challenge("ev", time.Now())
	for name, tc := range map[string]struct {
		q    device.Request
		want error
	}{
		"nothing":        {device.Request{}, device.ErrRequired},
		"challenge only": {device.Request{Challenge: ch}, device.ErrMalformed},
		"no challenge":   {device.Request{Integrity: "x"}, device.ErrMalformed},
		"both":           {device.Request{Challenge: ch, Integrity: "x", Assertion: "y"}, device.ErrMalformed},
	} {
		if _, err := r.svc.Check(context.Background(), r.sale, tc.q); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}
