package event

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestValidateLanes: lanes leave the default lane some rate, start no
// earlier than the queue opens and no later than the sale, and need FCFS
// on one join shard.
func TestValidateLanes(t *testing.T) {
	early := t0.Add(-5 * time.Minute)
	tooEarly, tooLate := t0.Add(-time.Hour), t0.Add(2*time.Minute)
	lane := func(name string, share float64) Lane { return Lane{Name: name, Share: share} }
	cases := []struct {
		name  string
		lanes []Lane
		mod   func(*Config)
		want  string
	}{
		{"two lanes", []Lane{lane("members", 0.3), {Name: "partner", Share: 0.2, StartsAt: &early, Claim: &LaneClaim{"tier", "gold"}}}, nil, ""},
		{"shares sum to 1", []Lane{lane("a", 0.5), lane("b", 0.5)}, nil, "sum"},
		{"zero share", []Lane{lane("a", 0)}, nil, "share"},
		{"share 1", []Lane{lane("a", 1)}, nil, "share"},
		{"bad name", []Lane{lane("Gold", 0.1)}, nil, "name"},
		{"default name", []Lane{lane("default", 0.1)}, nil, "name"},
		{"dot in name", []Lane{lane("a.b", 0.1)}, nil, "name"},
		{"twice", []Lane{lane("a", 0.1), lane("a", 0.1)}, nil, "twice"},
		{"before the queue opens", []Lane{{Name: "a", Share: 0.1, StartsAt: &tooEarly}}, nil, "starts_at"},
		{"after the sale", []Lane{{Name: "a", Share: 0.1, StartsAt: &tooLate}}, nil, "starts_at"},
		{"empty claim", []Lane{{Name: "a", Share: 0.1, Claim: &LaneClaim{}}}, nil, "claim"},
		{"lottery", []Lane{lane("a", 0.1)}, func(c *Config) { c.Mode = Lottery }, "fcfs"},
		{"join shards", []Lane{lane("a", 0.1)}, func(c *Config) { c.JoinShards = 4 }, "join_shards"},
		{"too many", make([]Lane, MaxLanes+1), nil, "at most"},
	}
	for _, tc := range cases {
		c := valid()
		c.Lanes = tc.lanes
		if tc.mod != nil {
			tc.mod(&c)
		}
		err := c.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an ErrInvalid naming %q", tc.name, err, tc.want)
		}
	}
	c := valid()
	if c.DefaultShare() != 1 {
		t.Errorf("without lanes the default lane has share %v, want 1", c.DefaultShare())
	}
}

// TestLanesLockWhenTheQueueOpens: names, order and starts lock LockMargin
// before the queue opens (tickets name lanes by index); shares and claims
// do not.
func TestLanesLockWhenTheQueueOpens(t *testing.T) {
	old := valid()
	old.Lanes = []Lane{{Name: "a", Share: 0.1}, {Name: "b", Share: 0.1}}
	open := old.PrequeueOpensAt.Add(time.Second)
	for name, change := range map[string]func(*Config){
		"reordered": func(c *Config) { c.Lanes = []Lane{c.Lanes[1], c.Lanes[0]} },
		"renamed":   func(c *Config) { c.Lanes = []Lane{{Name: "x", Share: 0.1}, c.Lanes[1]} },
		"removed":   func(c *Config) { c.Lanes = c.Lanes[:1] },
		"restarted": func(c *Config) {
			at := old.PrequeueOpensAt
			c.Lanes = []Lane{{Name: "a", Share: 0.1, StartsAt: &at}, c.Lanes[1]}
		},
	} {
		next := old
		change(&next)
		if err := CheckUpdate(&old, &next, open); !errors.Is(err, ErrLocked) {
			t.Errorf("%s after the queue opened: got %v, want ErrLocked", name, err)
		}
		if err := CheckUpdate(&old, &next, old.PrequeueOpensAt.Add(-LockMargin-time.Second)); err != nil {
			t.Errorf("%s before the queue opened: %v", name, err)
		}
		if err := CheckUpdate(&old, &next, old.PrequeueOpensAt.Add(-time.Second)); !errors.Is(err, ErrLocked) {
			t.Errorf("%s within LockMargin of the opening: got %v, want ErrLocked", name, err)
		}
	}
	next := old
	next.Lanes = []Lane{{Name: "a", Share: 0.3, Claim: &LaneClaim{"tier", "gold"}}, {Name: "b", Share: 0.05}}
	if err := CheckUpdate(&old, &next, open); err != nil {
		t.Errorf("shares and claims changed while open: %v", err)
	}
}
