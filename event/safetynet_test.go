package event

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func validNet() Config {
	c := Config{ID: "site", Mode: SafetyNet, StartsAt: t0, MaxActive: 500}
	c.Defaults()
	return c
}

// TestSafetyNetDefaults: a safety-net room needs only starts_at and
// max_active; it opens at starts_at and stays on for SafetyNetLife.
func TestSafetyNetDefaults(t *testing.T) {
	c := validNet()
	if err := c.Validate(); err != nil {
		t.Fatalf("got %v, want valid", err)
	}
	if !c.PrequeueOpensAt.Equal(t0) || !c.EndsAt.Equal(t0.Add(SafetyNetLife)) || c.Buckets != 1 || c.JoinShards != 1 || c.Supply != 0 {
		t.Fatalf("defaults: opens %v ends %v buckets %d shards %d supply %d", c.PrequeueOpensAt, c.EndsAt, c.Buckets, c.JoinShards, c.Supply)
	}
	if c.WindowEnd() != t0 || c.JoinEnd() != c.EndsAt {
		t.Fatalf("window end %v join end %v, want starts_at and ends_at", c.WindowEnd(), c.JoinEnd())
	}
}

func TestValidateSafetyNet(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"supply", func(c *Config) { c.Supply = 10 }, "supply"},
		{"reserve", func(c *Config) { c.ReserveUnits = 1 }, "reserve_units"},
		{"no threshold", func(c *Config) { c.MaxActive = 0 }, "max_active"},
		{"window", func(c *Config) { c.RandomWindowSeconds = 30 }, "random_window_seconds"},
		{"prequeue", func(c *Config) { c.PrequeueOpensAt = t0.Add(-time.Minute) }, "prequeue_opens_at"},
		{"shards", func(c *Config) { c.JoinShards = 4 }, "join_shards"},
		{"buckets", func(c *Config) { c.Buckets = 2 }, "buckets"},
		{"your_turn", func(c *Config) {
			c.Webhooks = []Webhook{{URL: "https://shop.example/h", Secret: "0123456789abcdef", Events: []string{"your_turn"}}}
		}, "your_turn"},
		{"no start", func(c *Config) { c.StartsAt, c.PrequeueOpensAt = time.Time{}, time.Time{} }, "starts_at"},
		{"rate", func(c *Config) { c.AdmitRatePerSecond = -1 }, "admit_rate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validNet()
			tc.change(&c)
			err := c.Validate()
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
}

// TestSafetyNetModeLocks: once switched on, a safety-net room cannot become
// a sale (or back): mode locks at starts_at as for every event.
func TestSafetyNetModeLocks(t *testing.T) {
	old := validNet()
	next := old
	next.Mode, next.Supply = FCFS, 10
	if err := CheckUpdate(&old, &next, t0.Add(time.Second)); !errors.Is(err, ErrLocked) {
		t.Fatalf("switch after start: %v, want ErrLocked", err)
	}
	if err := CheckUpdate(&old, &next, t0.Add(-time.Minute)); err != nil {
		t.Fatalf("switch before start: %v, want allowed", err)
	}
}
