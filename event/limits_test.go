package event

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestLimitsDefaults(t *testing.T) {
	c := valid()
	l := c.Limits
	want := Limits{
		Join:   Budget{Event: Off, IP: Rate{}, Device: Rate{1, 5}, User: Off}, // ip: the node's default
		Claim:  Budget{Event: Off, IP: Off, Device: Rate{2, 10}, User: Off},
		Status: StatusBudget{IP: Off, Ticket: Rate{10, 100}},
		PoW:    PoW{Bits: 15, TTLSeconds: 300},
	}
	if l != want {
		t.Fatalf("defaults\n got %+v\nwant %+v", l, want)
	}
	l.Defaults()
	if l != want {
		t.Fatalf("Defaults is not idempotent: %+v", l)
	}
	// Negative turns off; a rate without a burst gets max(1, rate).
	l.Join.User = Rate{PerSecond: -5, Burst: 3}
	l.Join.IP = Rate{PerSecond: 2.5}
	l.Claim.IP = Rate{PerSecond: 0.2}
	l.Defaults()
	if l.Join.User != Off || l.Join.IP != (Rate{2.5, 3}) || l.Claim.IP != (Rate{0.2, 1}) {
		t.Fatalf("got user %+v ip %+v claim ip %+v", l.Join.User, l.Join.IP, l.Claim.IP)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
}

func TestLimitsValidate(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Limits)
		want   string
	}{
		{"valid", func(*Limits) {}, ""},
		{"off", func(l *Limits) { l.Join.User = Off }, ""},
		{"huge rate", func(l *Limits) { l.Join.Event = Rate{2e6, 10} }, "limits.join.event"},
		{"NaN", func(l *Limits) { l.Claim.User = Rate{math.NaN(), 1} }, "limits.claim.user"},
		{"zero burst", func(l *Limits) { l.Claim.Device = Rate{1, 0.5} }, "limits.claim.device"},
		{"huge burst", func(l *Limits) { l.Status.Ticket = Rate{1, 2e7} }, "limits.status.ticket"},
		{"off with burst", func(l *Limits) { l.Status.IP = Rate{-1, 3} }, "limits.status.ip"},
		{"pow too hard", func(l *Limits) { l.PoW = PoW{Enabled: SwitchOn, Bits: 40, TTLSeconds: 60} }, "limits.pow.bits"},
		{"pow short ttl", func(l *Limits) { l.PoW.TTLSeconds = 1 }, "limits.pow.ttl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.change(&c.Limits)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tc.want != "" && (err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want ErrInvalid naming %q", err, tc.want)
			}
		})
	}
}

// TestLimitsPartialUpdate decodes an admin PUT over a stored config, as
// the admin API does: fields not sent keep their values.
func TestLimitsPartialUpdate(t *testing.T) {
	c := valid()
	body := `{"limits":{"join":{"ip":{"per_second":5}},"pow":{"enabled":true},"invite_only":true}}`
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	c.Defaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	l := c.Limits
	if l.Join.IP != (Rate{5, 5}) || l.Join.User != Off || l.PoW.Enabled != SwitchOn || l.PoW.Bits != 15 || !l.InviteOnly || l.OneClaimPerDevice {
		t.Fatalf("after the update: %+v", l)
	}
	raw, _ := json.Marshal(c.Limits)
	for _, field := range []string{`"per_second":5`, `"invite_only":true`, `"one_claim_per_payment":false`, `"ttl_seconds":300`} {
		if !strings.Contains(string(raw), field) {
			t.Errorf("JSON %s lacks %s", raw, field)
		}
	}
}
