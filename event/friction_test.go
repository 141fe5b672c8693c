package event

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/internal/testenv"
)

// TestFrictionDefaults: a per-IP join budget and, for lotteries, a proof
// of work where visitors are anonymous, unless staff chose; explicit off
// is honoured, explicit on holds everywhere.
func TestFrictionDefaults(t *testing.T) {
	own := Rate{PerSecond: 2, Burst: 4}
	cases := []struct {
		name      string
		mode      Mode
		ip        Rate
		pow       Switch
		anonymous bool
		wantIP    Rate
		wantPoW   bool
	}{
		{"anonymous lottery", Lottery, Rate{}, SwitchDefault, true, DefaultJoinIP, true},
		{"anonymous fcfs", FCFS, Rate{}, SwitchDefault, true, DefaultJoinIP, false},
		{"named lottery", Lottery, Rate{}, SwitchDefault, false, Off, false},
		{"named fcfs", FCFS, Rate{}, SwitchDefault, false, Off, false},
		{"staff off", Lottery, Off, SwitchOff, true, Off, false},
		{"staff on", FCFS, own, SwitchOn, false, own, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			c.Mode, c.Limits.Join.IP, c.Limits.PoW.Enabled = tc.mode, tc.ip, tc.pow
			c.Defaults()
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := c.JoinIPRate(tc.anonymous); got != tc.wantIP {
				t.Errorf("join ip %+v, want %+v", got, tc.wantIP)
			}
			if got := c.PoWRequired(tc.anonymous); got != tc.wantPoW {
				t.Errorf("pow required %v, want %v", got, tc.wantPoW)
			}
		})
	}
}

// TestFrictionJSON: absent keeps the stored choice, null and per_second 0
// go back to the default, false and -1 are off; anything else names the
// field.
func TestFrictionJSON(t *testing.T) {
	c := valid()
	steps := []struct {
		body   string
		wantIP Rate
		want   Switch
	}{
		{`{"limits":{"pow":{"enabled":false},"join":{"ip":{"per_second":-1}}}}`, Off, SwitchOff},
		{`{"limits":{"pow":{"bits":16}}}`, Off, SwitchOff},
		{`{"limits":{"pow":{"enabled":true},"join":{"ip":{"per_second":1}}}}`, Rate{1, 1}, SwitchOn},
		{`{"limits":{"pow":{"enabled":null},"join":{"ip":{"per_second":0,"burst":7}}}}`, Rate{}, SwitchDefault},
	}
	for i, s := range steps {
		if err := json.Unmarshal([]byte(s.body), &c); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		c.Defaults()
		if err := c.Validate(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if c.Limits.Join.IP != s.wantIP || c.Limits.PoW.Enabled != s.want {
			t.Fatalf("step %d: ip %+v pow %v, want %+v %v", i, c.Limits.Join.IP, c.Limits.PoW.Enabled, s.wantIP, s.want)
		}
		raw, _ := json.Marshal(c.Limits.PoW)
		var back PoW
		if err := json.Unmarshal(raw, &back); err != nil || back != c.Limits.PoW {
			t.Fatalf("step %d: %s does not read back: %+v %v", i, raw, back, err)
		}
	}
	for _, bad := range []string{`1`, `"on"`, `{}`} {
		err := json.Unmarshal([]byte(`{"limits":{"pow":{"enabled":`+bad+`}}}`), &c)
		if err == nil || !strings.Contains(err.Error(), "limits.pow.enabled") {
			t.Errorf("enabled %s: %v, want an error naming limits.pow.enabled", bad, err)
		}
	}
}

// TestStoreUpgradesOldLimits: a configuration stored before "default" and
// "off" were told apart had its defaults written out as off; read back,
// it takes today's defaults. One stored now keeps staff's off.
func TestStoreUpgradesOldLimits(t *testing.T) {
	rdb := testenv.StartRedis(t).Client(t)
	ctx := context.Background()
	s := NewStore(rdb)
	old := valid()
	old.Mode, old.Version = Lottery, 1
	raw, _ := json.Marshal(old)
	raw = []byte(strings.Replace(string(raw), `"enabled":null`, `"enabled":false`, 1))
	raw = []byte(strings.Replace(string(raw), `"ip":{"per_second":0,"burst":0}`, `"ip":{"per_second":-1,"burst":0}`, 1))
	if !strings.Contains(string(raw), `"enabled":false`) || strings.Contains(string(raw), "limits_schema") {
		t.Fatalf("not an old configuration: %s", raw)
	}
	if err := rdb.Set(ctx, configKey(old.ID), raw, 0).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, old.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.JoinIPRate(true) != DefaultJoinIP || !got.PoWRequired(true) {
		t.Fatalf("old configuration read back: ip %+v pow %v, want today's defaults", got.Limits.Join.IP, got.Limits.PoW.Enabled)
	}

	got.Limits.Join.IP, got.Limits.PoW.Enabled = Off, SwitchOff
	if _, err := s.Put(ctx, got); err != nil {
		t.Fatal(err)
	}
	again, err := s.Get(ctx, old.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again.JoinIPRate(true) != Off || again.PoWRequired(true) {
		t.Fatalf("staff's off read back as ip %+v pow %v", again.Limits.Join.IP, again.Limits.PoW.Enabled)
	}
}

// TestBusyNetworkRate: the ceiling of challenged joins per address is
// staff's, else ten times join.ip in force; off where join.ip is off; a
// ceiling turned off (no bound at all) is refused.
func TestBusyNetworkRate(t *testing.T) {
	own := Rate{PerSecond: 5, Burst: 50}
	for _, tc := range []struct {
		name      string
		ip, busy  Rate
		anonymous bool
		want      Rate
	}{
		{"anonymous default", Rate{}, Rate{}, true, Rate{PerSecond: 1, Burst: 100}},
		{"named default", Rate{}, Rate{}, false, Off},
		{"staff join.ip", Rate{PerSecond: 2, Burst: 3}, Rate{}, false, Rate{PerSecond: 20, Burst: 30}},
		{"join.ip off", Off, Rate{}, true, Off},
		{"staff ceiling", Rate{}, own, true, own},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			c.Limits.Join.IP, c.Limits.BusyNetwork = tc.ip, tc.busy
			c.Defaults()
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := c.BusyNetworkRate(tc.anonymous); got != tc.want {
				t.Errorf("busy network %+v, want %+v", got, tc.want)
			}
		})
	}
	for _, bad := range []Rate{Off, {PerSecond: -5}, {PerSecond: 1, Burst: MaxBurst + 1}} {
		c := valid()
		c.Limits.BusyNetwork = bad
		c.Defaults()
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "limits.busy_network") {
			t.Errorf("busy_network %+v: Validate = %v, want refused naming the field", bad, err)
		}
	}
}
