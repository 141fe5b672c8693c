package event

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func valid() Config {
	c := Config{ID: "drop-1", Supply: 100, StartsAt: t0, PrequeueOpensAt: t0.Add(-10 * time.Minute), RandomWindowSeconds: 60}
	c.Defaults()
	return c
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Config)
		want   string // substring of the error, "" for valid
	}{
		{"valid", func(*Config) {}, ""},
		{"bad id", func(c *Config) { c.ID = "Drop 1" }, "id must match"},
		{"id too long", func(c *Config) { c.ID = strings.Repeat("a", 65) }, "id must match"},
		{"no supply", func(c *Config) { c.Supply = 0 }, "supply"},
		{"reserve all", func(c *Config) { c.ReserveUnits = 100 }, "reserve_units"},
		{"limit zero", func(c *Config) { c.PerUserLimit = 0 }, "per_user_limit"},
		{"opens after start", func(c *Config) { c.PrequeueOpensAt = t0.Add(time.Minute) }, "prequeue_opens_at"},
		{"ends before start", func(c *Config) { c.EndsAt = t0 }, "ends_at"},
		{"bad mode", func(c *Config) { c.Mode = "auction" }, "mode"},
		{"window past end", func(c *Config) { c.EndsAt = t0.Add(30 * time.Second) }, "window"},
		{"negative rate", func(c *Config) { c.AdmitRatePerSecond = -1 }, "admit_rate"},
		{"NaN-free rate", func(c *Config) { c.AdmitRatePerSecond = 2e6 }, "admit_rate"},
		{"too many buckets", func(c *Config) { c.Buckets = 101 }, "buckets"},
		{"no join shards", func(c *Config) { c.JoinShards = -1 }, "join_shards"},
		{"too many join shards", func(c *Config) { c.JoinShards = MaxJoinShards + 1 }, "join_shards"},
		{"sharded joining past the span", func(c *Config) {
			c.JoinShards, c.PrequeueOpensAt = 2, c.EndsAt.Add(-MaxShardedSpan-time.Second)
		}, "at most 4194303 seconds"},
		{"sharded joining at the span", func(c *Config) { c.JoinShards, c.PrequeueOpensAt = 2, c.EndsAt.Add(-MaxShardedSpan) }, ""},
		{"one slot past the span", func(c *Config) { c.PrequeueOpensAt = c.EndsAt.Add(-MaxShardedSpan - time.Second) }, ""},
		{"short admission", func(c *Config) { c.AdmissionTTLSeconds = 1 }, "admission_ttl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.change(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tc.want != "" && (err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
}

func TestPhaseAt(t *testing.T) {
	c := valid()
	cases := []struct {
		at      time.Time
		soldOut bool
		want    Phase
	}{
		{t0.Add(-time.Hour), false, Upcoming},
		{t0.Add(-time.Minute), false, Prequeue},
		{t0, false, Open},
		{t0.Add(time.Minute), true, SoldOut},
		{c.EndsAt, false, Closed},
		{c.EndsAt, true, Closed},
	}
	for _, tc := range cases {
		if got := c.PhaseAt(tc.at, tc.soldOut); got != tc.want {
			t.Errorf("PhaseAt(%s, %v) = %s, want %s", tc.at.Sub(t0), tc.soldOut, got, tc.want)
		}
	}
}

func TestWindowEnd(t *testing.T) {
	c := valid()
	if got := c.WindowEnd(); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("fcfs window end %s, want starts_at + 60s", got)
	}
	c.Mode = Lottery
	if got := c.WindowEnd(); !got.Equal(t0) {
		t.Errorf("lottery window end %s, want starts_at", got)
	}
	if got := c.JoinEnd(); !got.Equal(t0) {
		t.Errorf("lottery join end %s, want starts_at", got)
	}
}

func TestCheckUpdate(t *testing.T) {
	old := valid()
	cases := []struct {
		name   string
		at     time.Time
		change func(*Config)
		locked bool
	}{
		{"mode before the start", t0.Add(-30 * time.Second), func(c *Config) { c.Mode = Lottery }, false},
		{"mode in a started window", t0.Add(30 * time.Second), func(c *Config) { c.Mode = Lottery }, true},
		{"window longer once started", t0.Add(30 * time.Second), func(c *Config) { c.RandomWindowSeconds = 600 }, true},
		{"start moved into the past", t0.Add(-30 * time.Second), func(c *Config) { c.StartsAt = t0.Add(-time.Hour) }, true},
		{"mode after window closes", t0.Add(2 * time.Minute), func(c *Config) { c.Mode = Lottery }, true},
		{"window after it closed", t0.Add(2 * time.Minute), func(c *Config) { c.RandomWindowSeconds = 10 }, true},
		{"rate any time", t0.Add(2 * time.Minute), func(c *Config) { c.AdmitRatePerSecond = 5 }, false},
		{"supply before start", t0.Add(-time.Minute), func(c *Config) { c.Supply = 50 }, false},
		{"supply after start", t0.Add(time.Second), func(c *Config) { c.Supply = 50 }, true},
		{"buckets after start", t0.Add(time.Second), func(c *Config) { c.Buckets = 2 }, true},
		{"opening after it passed", t0.Add(-time.Minute), func(c *Config) { c.PrequeueOpensAt = t0.Add(-5 * time.Minute) }, true},
		{"join shards before the queue opens", t0.Add(-11 * time.Minute), func(c *Config) { c.JoinShards = 16 }, false},
		{"join shards once the queue opened", t0.Add(-9 * time.Minute), func(c *Config) { c.JoinShards = 16 }, true},
		{"pause any time", t0.Add(time.Hour), func(c *Config) { c.Paused = true }, false},
		// Node views lag by up to MaxViewAge: what they act on locks
		// LockMargin early.
		{"start postponed just over the margin before it", t0.Add(-LockMargin - time.Millisecond), func(c *Config) { c.StartsAt = t0.Add(time.Hour) }, false},
		{"start postponed within the margin", t0.Add(-LockMargin), func(c *Config) { c.StartsAt = t0.Add(time.Hour) }, true},
		{"start moved to within the margin", t0.Add(-time.Hour), func(c *Config) {
			c.StartsAt, c.RandomWindowSeconds = t0.Add(-time.Hour+LockMargin-time.Millisecond), 0
		}, true},
		{"join shards within the margin of the opening", t0.Add(-10*time.Minute - LockMargin), func(c *Config) { c.JoinShards = 16 }, true},
		{"opening moved within the margin of it", t0.Add(-10*time.Minute - time.Second), func(c *Config) { c.PrequeueOpensAt = t0.Add(-20 * time.Minute) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := old
			tc.change(&next)
			err := CheckUpdate(&old, &next, tc.at)
			if got := errors.Is(err, ErrLocked); got != tc.locked {
				t.Fatalf("got %v, want locked=%v", err, tc.locked)
			}
		})
	}
}
