package node_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/anteroom/anteroom/attest/attesttest"
	"github.com/anteroom/anteroom/attest/device"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

const (
	attestAppID = "ABCDE12345.com.example.shop"
	attestPkg   = "com.example.shop"
)

// attestRig is a node trusting a test App Attest root and holding test
// Play Integrity keys, in header identity mode.
type attestRig struct {
	t    *testing.T
	n    *node.Node
	ca   *attesttest.AppleCA
	play *attesttest.Play
}

func newAttestRig(t *testing.T) *attestRig {
	r := &attestRig{t: t, ca: attesttest.NewAppleCA(t), play: attesttest.NewPlay(t)}
	r.n = nodetest.Start(t, nodetest.HeaderMode(node.Config{
		RedisURL: testenv.StartRedis(t).URL(), NATSURL: testenv.StartNATS(t).URL(),
		AppAttestRoots:             r.ca.Roots(),
		PlayIntegrityDecryptionKey: r.play.DecryptionKey, PlayIntegrityVerificationKey: r.play.VerificationKey,
	}))
	return r
}

func (r *attestRig) url(ev, route string) string { return r.n.URL() + "/events/" + ev + route }

func (r *attestRig) challenge(ev string) string {
	r.t.Helper()
	a := nodetest.Call(r.t, http.MethodPost, r.url(ev, "/attest/challenge"), nil, nil)
	if a.Status != http.StatusOK || len(nodetest.Str(a.Body, "challenge")) != 54 {
		r.t.Fatalf("challenge: %d %s", a.Status, a.Raw)
	}
	return nodetest.Str(a.Body, "challenge")
}

// register posts d's attestation object for appID to ev.
func (r *attestRig) register(ev string, d *attesttest.Device, appID string) nodetest.Answer {
	r.t.Helper()
	ch := r.challenge(ev)
	body, _ := json.Marshal(map[string]string{"key_id": d.KeyID(), "challenge": ch,
		"attestation": base64.StdEncoding.EncodeToString(r.ca.Attest(r.t, d, appID, ch))})
	return nodetest.Call(r.t, http.MethodPost, r.url(ev, "/attest/apple"), nil, body)
}

// asserted returns user's headers for a POST to route of ev proven by d's
// assertion with counter n over a fresh challenge (no body).
func (r *attestRig) asserted(ev, route, user string, d *attesttest.Device, n uint32) map[string]string {
	r.t.Helper()
	ch := r.challenge(ev)
	cd := device.ClientData(ev, http.MethodPost, "/events/"+ev+route, ch, nil)
	return map[string]string{"X-User-ID": user, device.ChallengeHeader: ch, device.KeyIDHeader: d.KeyID(),
		device.AssertionHeader: d.Assert(r.t, attestAppID, n, cd)}
}

// integrity returns user's headers for a POST to route of ev proven by a
// Play Integrity token bound to it.
func (r *attestRig) integrity(ev, route, user string) map[string]string {
	r.t.Helper()
	ch := r.challenge(ev)
	h := device.RequestHash(ev, http.MethodPost, "/events/"+ev+route, ch, nil)
	return map[string]string{"X-User-ID": user, device.ChallengeHeader: ch,
		device.IntegrityHeader: r.play.Token(r.t, attesttest.Verdict{PackageName: attestPkg, RequestHash: h})}
}

// admit joins with hdr and polls for the admission token.
func (r *attestRig) admit(ev string, hdr map[string]string) (string, int64) {
	r.t.Helper()
	j := nodetest.Call(r.t, http.MethodPost, r.url(ev, "/join"), hdr, nil)
	if j.Status != http.StatusOK {
		r.t.Fatalf("join: %d %s", j.Status, j.Raw)
	}
	var token string
	nodetest.WaitFor(r.t, "admission", 0, func() bool {
		s := nodetest.Call(r.t, http.MethodGet, r.url(ev, "/status"), map[string]string{"Authorization": "Bearer " + nodetest.Str(j.Body, "ticket")}, nil)
		token = nodetest.Str(s.Body, "admission_token")
		return token != ""
	})
	seq, _ := j.Body["seq"].(float64)
	return token, int64(seq)
}

func (r *attestRig) claim(ev, token string, hdr map[string]string) nodetest.Answer {
	r.t.Helper()
	h := map[string]string{"Authorization": "Bearer " + token, "Idempotency-Key": "k"}
	for k, v := range hdr {
		h[k] = v
	}
	return nodetest.Call(r.t, http.MethodPost, r.url(ev, "/claim"), h, nil)
}

func wantAnswer(t *testing.T, what string, a nodetest.Answer, status int, code string) {
	t.Helper()
	if a.Status != status || (code != "" && nodetest.Str(a.Body, "code") != code) {
		t.Fatalf("%s: %d %s, want %d %s", what, a.Status, a.Raw, status, code)
	}
}

// TestAppOnlySaleWithAppAttest: a sale that requires attestation and
// counts claims per attested device. A browser's join, a replayed join,
// a claim whose counter does not grow, a malformed attestation object and
// one for another App ID are refused and record nothing (no queue place,
// no claim: the same user's next genuine request succeeds in the place
// it would have had); two users on one attested phone get one claim, the
// second 409 signal_limit naming the device.
func TestAppOnlySaleWithAppAttest(t *testing.T) {
	r := newAttestRig(t)
	sale := openSale(10, 1, 0, 0, 1000)
	sale["attestation"] = map[string]any{"require": true, "apple": map[string]any{"app_id": attestAppID}}
	sale["signals"] = map[string]any{"device": map[string]any{"source": "attestation"}}
	sale["limits"] = map[string]any{"signal_claims": map[string]any{"device": 1}}
	nodetest.CreateSale(t, r.n, "app", sale)

	// A browser: no attestation, refused, nothing counted.
	wantAnswer(t, "a browser's join", nodetest.Call(t, http.MethodPost, r.url("app", "/join"), map[string]string{"X-User-ID": "alice"}, nil), 403, "attestation_failed")

	// The basic page (no JavaScript) is a browser too.
	if a := nodetest.Call(t, http.MethodPost, r.n.URL()+"/e/app/basic/join", map[string]string{"X-User-ID": "alice", "Content-Type": "application/x-www-form-urlencoded"}, []byte("form=x")); a.Status != http.StatusForbidden {
		t.Fatalf("the basic page's join: %d, want 403", a.Status)
	}

	// Registration refusals: malformed 400, another App ID 403, and a
	// replayed attestation (its challenge spent) 403.
	phone := attesttest.NewDevice(t)
	ch := r.challenge("app")
	bad, _ := json.Marshal(map[string]string{"key_id": phone.KeyID(), "challenge": ch, "attestation": base64.StdEncoding.EncodeToString([]byte("not cbor"))})
	wantAnswer(t, "a malformed attestation", nodetest.Call(t, http.MethodPost, r.url("app", "/attest/apple"), nil, bad), 400, "bad_request")
	wantAnswer(t, "an attestation for another App ID", r.register("app", phone, "ZZZZZ99999.com.other.app"), 403, "attestation_failed")
	obj, _ := json.Marshal(map[string]string{"key_id": phone.KeyID(), "challenge": ch,
		"attestation": base64.StdEncoding.EncodeToString(r.ca.Attest(t, phone, attestAppID, ch))})
	wantAnswer(t, "a genuine attestation", nodetest.Call(t, http.MethodPost, r.url("app", "/attest/apple"), nil, obj), 201, "")
	wantAnswer(t, "the same attestation again", nodetest.Call(t, http.MethodPost, r.url("app", "/attest/apple"), nil, obj), 403, "attestation_failed")

	// An assertion by a key never attested is refused.
	stranger := attesttest.NewDevice(t)
	wantAnswer(t, "a join by an unattested key", nodetest.Call(t, http.MethodPost, r.url("app", "/join"), r.asserted("app", "/join", "alice", stranger, 1), nil), 403, "attestation_failed")

	// Alice's genuine join is the queue's first place: the refusals
	// above recorded none. Its replay is refused.
	join := r.asserted("app", "/join", "alice", phone, 1)
	aliceTok, seq := r.admit("app", join)
	if seq != 1 {
		t.Fatalf("alice's join has seq %d, want 1: a refused join took a place", seq)
	}
	wantAnswer(t, "a replayed join", nodetest.Call(t, http.MethodPost, r.url("app", "/join"), join, nil), 403, "attestation_failed")

	// A claim whose counter does not grow (1 again, a fresh challenge)
	// is refused and records nothing: the same admission then claims.
	wantAnswer(t, "a claim with counter 1 again", r.claim("app", aliceTok, r.asserted("app", "/claim", "alice", phone, 1)), 403, "attestation_failed")
	wantAnswer(t, "a browser's claim", r.claim("app", aliceTok, map[string]string{"X-User-ID": "alice"}), 403, "attestation_failed")
	wantAnswer(t, "alice's claim", r.claim("app", aliceTok, r.asserted("app", "/claim", "alice", phone, 2)), 201, "")

	// Bob on alice's phone: his own account, the same attested key.
	bobTok, _ := r.admit("app", r.asserted("app", "/join", "bob", phone, 3))
	a := r.claim("app", bobTok, r.asserted("app", "/claim", "bob", phone, 4))
	if a.Status != http.StatusConflict || nodetest.Str(a.Body, "code") != "signal_limit" || nodetest.Str(a.Body, "signal") != "device" {
		t.Fatalf("bob's claim on alice's phone: %d %s, want 409 signal_limit device", a.Status, a.Raw)
	}

	// Carol on her own phone claims.
	carolPhone := attesttest.NewDevice(t)
	wantAnswer(t, "carol's attestation", r.register("app", carolPhone, attestAppID), 201, "")
	carolTok, _ := r.admit("app", r.asserted("app", "/join", "carol", carolPhone, 1))
	wantAnswer(t, "carol's claim", r.claim("app", carolTok, r.asserted("app", "/claim", "carol", carolPhone, 2)), 201, "")
}

// TestAppOnlySaleWithPlayIntegrity: an Android app's joins and claims
// carry integrity tokens bound to the request and a fresh challenge; a
// replayed token, one bound to another request and none at all are
// refused, and the refusals record nothing.
func TestAppOnlySaleWithPlayIntegrity(t *testing.T) {
	r := newAttestRig(t)
	sale := openSale(10, 1, 0, 0, 1000)
	sale["attestation"] = map[string]any{"require": true, "google": map[string]any{"package_name": attestPkg}}
	nodetest.CreateSale(t, r.n, "droid", sale)

	join := r.integrity("droid", "/join", "dan")
	tok, seq := r.admit("droid", join)
	if seq != 1 {
		t.Fatalf("first join seq %d, want 1", seq)
	}
	wantAnswer(t, "a replayed join", nodetest.Call(t, http.MethodPost, r.url("droid", "/join"), join, nil), 403, "attestation_failed")
	wantAnswer(t, "a join's token on a claim", r.claim("droid", tok, r.integrity("droid", "/join", "dan")), 403, "attestation_failed")
	wantAnswer(t, "a claim without a token", r.claim("droid", tok, map[string]string{"X-User-ID": "dan"}), 403, "attestation_failed")
	wantAnswer(t, "a claim with a malformed token", r.claim("droid", tok, map[string]string{"X-User-ID": "dan", device.ChallengeHeader: r.challenge("droid"), device.IntegrityHeader: "x"}), 400, "bad_request")
	wantAnswer(t, "dan's claim", r.claim("droid", tok, r.integrity("droid", "/claim", "dan")), 201, "")
}

// TestAttestationSaveRefused: sales whose attestation cannot work are
// refused at save, 400 naming the field.
func TestAttestationSaveRefused(t *testing.T) {
	r := newAttestRig(t)
	admin := map[string]string{"Authorization": "Bearer " + r.n.AdminToken}
	for name, edit := range map[string]func(map[string]any){
		"require without an app": func(s map[string]any) { s["attestation"] = map[string]any{"require": true} },
		"a bad app id": func(s map[string]any) {
			s["attestation"] = map[string]any{"apple": map[string]any{"app_id": "com.example.shop"}}
		},
		"a bad verdict": func(s map[string]any) {
			s["attestation"] = map[string]any{"google": map[string]any{"package_name": attestPkg, "verdicts": map[string]any{"device": []string{"ROOTED"}}}}
		},
		"device from attestation with android": func(s map[string]any) {
			s["attestation"] = map[string]any{"require": true, "apple": map[string]any{"app_id": attestAppID}, "google": map[string]any{"package_name": attestPkg}}
			s["signals"] = map[string]any{"device": map[string]any{"source": "attestation"}}
		},
		"device from attestation, not required": func(s map[string]any) {
			s["attestation"] = map[string]any{"apple": map[string]any{"app_id": attestAppID}}
			s["signals"] = map[string]any{"device": map[string]any{"source": "attestation"}}
		},
		"payment from attestation": func(s map[string]any) {
			s["attestation"] = map[string]any{"require": true, "apple": map[string]any{"app_id": attestAppID}}
			s["signals"] = map[string]any{"payment": map[string]any{"source": "attestation"}}
		},
	} {
		s := openSale(10, 1, 0, 0, 100)
		edit(s)
		raw, _ := json.Marshal(s)
		a := nodetest.Call(t, http.MethodPut, r.n.URL()+"/admin/events/bad", admin, raw)
		if a.Status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", name, a.Status, a.Raw)
		}
	}
	// Without attestation configured the routes are 404.
	nodetest.CreateSale(t, r.n, "plain", openSale(10, 1, 0, 0, 100))
	wantAnswer(t, "a challenge for a sale without apps", nodetest.Call(t, http.MethodPost, r.url("plain", "/attest/challenge"), nil, nil), 404, "not_found")
}
