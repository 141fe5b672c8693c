package lifecycle

import (
	"context"
	"testing"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/netguard"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestWebhookRefusesPrivateTargets: by default a webhook may not target
// loopback, private, link-local or metadata addresses: the dial is
// refused (nothing reaches the loopback receiver) and the delivery's
// error says so by class, not with the dial error's text.
func TestWebhookRefusesPrivateTargets(t *testing.T) {
	rdb := testenv.StartRedis(t).Client(t)
	rc, srv := newReceiver(t, "guard-secret-0123", 0)
	d := NewDeliverer(nil, rdb, nil, DeliverConfig{AllowHTTP: true})
	e := Event{ID: "g.sale_opened.1", Event: "g", Type: "sale_opened"}
	for _, u := range []string{srv.URL + "/hook", "https://169.254.169.254/latest/meta-data/", "http://[::ffff:169.254.169.254]/x", "https://10.0.0.1:1/hook"} {
		err := d.deliver(context.Background(), &event.Webhook{URL: u, Secret: "guard-secret-0123"}, e, []byte(`{}`))
		if err == nil || err.Error() != "request failed: refused_target" {
			t.Errorf("webhook %s: %v, want request failed: refused_target", u, err)
		}
	}
	if n := rc.count(e.ID); n != 0 {
		t.Errorf("the loopback receiver got %d requests, want 0", n)
	}
	// The operator's setting lets a chosen network through.
	allowed := NewDeliverer(nil, rdb, nil, DeliverConfig{AllowHTTP: true, Targets: loopback(t)})
	if err := allowed.deliver(context.Background(), &event.Webhook{URL: srv.URL + "/hook", Secret: "guard-secret-0123"}, e, []byte(`{}`)); err != nil || rc.count(e.ID) != 1 {
		t.Errorf("with loopback allowed: %v, %d requests; want delivered once", err, rc.count(e.ID))
	}
}

// loopback is the deliverer's policy in tests whose receivers listen on
// loopback: allowed by name, as an operator would.
func loopback(t *testing.T) netguard.Policy {
	t.Helper()
	p, err := netguard.Allow(netguard.Loopback)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
