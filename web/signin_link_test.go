package web

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/staff"
)

// fakeLinks is a store of sign-in links: redeem answers Redeem (nil:
// every link is spent).
type fakeLinks struct {
	redeem func(token string) (staff.Account, error)
}

func (f fakeLinks) Redeem(_ context.Context, token string, _ time.Time) (staff.Account, error) {
	if f.redeem == nil {
		return staff.Account{}, staff.ErrLinkSpent
	}
	return f.redeem(token)
}

// TestSignInLinkRefusesRemote: a sign-in link presented by a peer that
// is not loopback (app.Test's peer is 0.0.0.0) is refused 403 before the
// link is looked at, with no cookie: with no forwarding header, with a
// forged X-Forwarded-For or Forwarded naming loopback, and even when the
// peer is a trusted proxy whose X-Forwarded-For names loopback. A node
// without the links (every node but the demo's) has no such route.
func TestSignInLinkRefusesRemote(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	spent := 0
	links := fakeLinks{redeem: func(string) (staff.Account, error) {
		spent++
		return staff.Account{Name: "demo"}, nil
	}}
	const path = "/admin/session/link?token=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA&event=ev"
	for name, tc := range map[string]struct {
		proxies []string
		hdr     map[string]string
	}{
		"remote":                         {},
		"remote, forged X-Forwarded-For": {hdr: map[string]string{"X-Forwarded-For": "127.0.0.1"}},
		"remote, forged Forwarded":       {hdr: map[string]string{"Forwarded": "for=127.0.0.1"}},
		"remote, forged X-Real-IP":       {hdr: map[string]string{"X-Real-IP": "::1"}},
		"a trusted proxy naming loopback": {proxies: []string{"0.0.0.0/32"},
			hdr: map[string]string{"X-Forwarded-For": "127.0.0.1"}},
	} {
		app := mustNew(t, Config{AdminToken: testAdminToken, Log: log, TrustedProxies: tc.proxies},
			Deps{Sales: consoleSales{sale: testSale()}, SignInLinks: links})
		r, p := send(t, app, http.MethodGet, path, tc.hdr, "")
		if r.StatusCode != http.StatusForbidden || p["code"] != "forbidden" {
			t.Errorf("%s: %d %v, want 403 forbidden", name, r.StatusCode, p)
		}
		if c := r.Header.Get("Set-Cookie"); c != "" {
			t.Errorf("%s: Set-Cookie %q, want none", name, c)
		}
	}
	if spent != 0 {
		t.Errorf("%d links redeemed by refused requests, want none", spent)
	}
	if r, _ := send(t, testApp(t), http.MethodGet, path, nil, ""); r.StatusCode != http.StatusNotFound {
		t.Errorf("a node without sign-in links: %d, want 404", r.StatusCode)
	}
}
