package event

import (
	"errors"
	"testing"
	"time"
)

// TestShopValidation refuses malformed shop settings with ErrInvalid and
// an http health URL unless the node allows http by name.
func TestShopValidation(t *testing.T) {
	base := func() Config {
		now := time.Now()
		return Config{ID: "s", Supply: 10, StartsAt: now, EndsAt: now.Add(time.Hour)}
	}
	const secret = "shop-secret-0123456789"
	for _, tc := range []struct {
		name string
		shop Shop
		ok   bool
	}{
		{"none", Shop{}, true},
		{"secret only", Shop{Secret: secret}, true},
		{"short secret", Shop{Secret: "short"}, false},
		{"url", Shop{Health: &HealthCheck{URL: "https://shop.example/healthz"}}, true},
		{"push only", Shop{Secret: secret, Health: &HealthCheck{}}, true},
		{"push without a secret", Shop{Health: &HealthCheck{}}, false},
		{"credentials in the url", Shop{Health: &HealthCheck{URL: "https://u:p@shop.example/"}}, false},
		{"relative url", Shop{Health: &HealthCheck{URL: "/healthz"}}, false},
		{"ftp", Shop{Health: &HealthCheck{URL: "ftp://shop.example/"}}, false},
		{"timeout over interval", Shop{Health: &HealthCheck{URL: "https://shop.example/", IntervalSeconds: 1, TimeoutSeconds: 2}}, false},
		{"error rate over 1", Shop{Secret: secret, Health: &HealthCheck{MaxErrorRate: 1.5}}, false},
		{"negative fail_after", Shop{Secret: secret, Health: &HealthCheck{FailAfter: -1}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			c.Shop = tc.shop
			c.Defaults()
			err := c.Validate()
			if tc.ok && err != nil {
				t.Fatalf("got %v, want valid", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
		})
	}
	c := base()
	c.Shop.Health = &HealthCheck{URL: "http://127.0.0.1:8081/healthz"}
	c.Defaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := CheckWebhookSchemes(&c, false); !errors.Is(err, ErrInvalid) {
		t.Fatalf("http health URL without allow-http: %v, want ErrInvalid", err)
	}
	if err := CheckWebhookSchemes(&c, true); err != nil {
		t.Fatalf("http health URL with allow-http: %v", err)
	}
	if r := RedactShop(Shop{Secret: secret, Health: c.Shop.Health}); r.Secret != "" || !r.SecretSet || r.Health == c.Shop.Health {
		t.Fatalf("redacted %+v: want no secret, secret_set and a copy of health", r)
	}
}
