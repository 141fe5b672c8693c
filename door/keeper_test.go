package door_test

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
)

// fakeLists answers from maps: users[list][user] and nets[list].
type fakeLists struct {
	users map[string]map[string]door.Membership
	nets  map[string][]netip.Prefix
}

func (f fakeLists) User(list, user string) door.Membership { return f.users[list][user] }
func (f fakeLists) Addr(list string, a netip.Addr) door.Membership {
	for _, p := range f.nets[list] {
		if p.Contains(a) {
			return door.Present
		}
	}
	return door.Absent
}
func (f fakeLists) Hash(user string) uint64 { return uint64(len(user)) }

// pathRules matches a rule named like the request's path.
type pathRules struct{}

func (pathRules) Match(cfg *event.Config, r *door.Request) (string, door.Action, bool) {
	for _, rule := range cfg.Door.Rules {
		if "/"+rule.Name == r.Path {
			for i, t := range event.Thens {
				if t == rule.Then {
					return rule.Name, door.Action(map[int]door.Action{0: door.Queue, 1: door.Bypass, 2: door.Block, 3: door.Challenge, 4: door.Sink}[i]), true
				}
			}
		}
	}
	return "", 0, false
}

func TestCheckOrder(t *testing.T) {
	lists := fakeLists{
		users: map[string]map[string]door.Membership{
			"bad":  {"mallory": door.Maybe, "eve": door.Maybe},
			"vip":  {"alice": door.Maybe},
			"vip2": {"bob": door.Maybe},
		},
		nets: map[string][]netip.Prefix{"bad": {netip.MustParsePrefix("10.6.0.0/16")}, "office": {netip.MustParsePrefix("192.0.2.0/24")}},
	}
	rules := []event.Rule{
		{Name: "health", When: "x", Then: "bypass"},
		{Name: "bots", When: "x", Then: "sink"},
		{Name: "hard", When: "x", Then: "challenge"},
		{Name: "no", When: "x", Then: "block"},
	}
	blockOnly := &event.Config{Door: event.Door{BlockLists: []string{"bad"}, Rules: rules}}
	eligible := &event.Config{Door: event.Door{BlockLists: []string{"bad"}, EligibleLists: []string{"vip", "vip2", "office"}, Rules: rules}}
	d := door.New(lists, pathRules{})
	addr := netip.MustParseAddr("203.0.113.9")
	for _, tc := range []struct {
		name string
		cfg  *event.Config
		r    door.Request
		step door.Step
		want door.Verdict
	}{
		{"nobody listed queues", blockOnly, door.Request{User: "alice", Addr: addr}, door.Join, door.Verdict{Action: door.Queue}},
		{"a maybe at the join goes to the script", blockOnly, door.Request{User: "mallory", Addr: addr}, door.Join, door.Verdict{Action: door.Queue, Exact: door.Exact{Block: []string{"bad"}}}},
		{"a maybe elsewhere refuses", blockOnly, door.Request{User: "mallory", Addr: addr}, door.Status, door.Verdict{Action: door.Block}},
		{"a maybe at the claim refuses", blockOnly, door.Request{User: "mallory"}, door.Claim, door.Verdict{Action: door.Block}},
		{"a blocked network refuses at the join", blockOnly, door.Request{User: "alice", Addr: netip.MustParseAddr("10.6.1.2")}, door.Join, door.Verdict{Action: door.Block}},
		{"a mapped v4 address is its v4", blockOnly, door.Request{User: "alice", Addr: netip.MustParseAddr("::ffff:10.6.1.2")}, door.Gate, door.Verdict{Action: door.Block}},
		{"block lists before rules: a bypass does not save a listed network", blockOnly, door.Request{Path: "/health", Addr: netip.MustParseAddr("10.6.1.2")}, door.Gate, door.Verdict{Action: door.Block}},
		{"a bypass with a maybe at the join refuses (no script decides it)", blockOnly, door.Request{Path: "/health", User: "eve"}, door.Join, door.Verdict{Action: door.Block}},
		{"a rule's bypass", blockOnly, door.Request{Path: "/health", User: "alice"}, door.Gate, door.Verdict{Action: door.Bypass, Rule: "health"}},
		{"a rule's sink", blockOnly, door.Request{Path: "/bots", User: "alice"}, door.Join, door.Verdict{Action: door.Sink, Rule: "bots"}},
		{"a rule's block", blockOnly, door.Request{Path: "/no", User: "alice"}, door.Status, door.Verdict{Action: door.Block, Rule: "no"}},
		{"a challenge keeps the exact block lists", blockOnly, door.Request{Path: "/hard", User: "mallory"}, door.Join, door.Verdict{Action: door.Challenge, Rule: "hard", Exact: door.Exact{Block: []string{"bad"}}}},
		{"eligible by network (exact)", eligible, door.Request{User: "carol", Addr: netip.MustParseAddr("192.0.2.7")}, door.Join, door.Verdict{Action: door.Queue}},
		{"eligible maybe at the join: the script decides", eligible, door.Request{User: "alice", Addr: addr}, door.Join, door.Verdict{Action: door.Queue, Exact: door.Exact{Eligible: []string{"vip"}}}},
		{"eligible maybe at a room's join: its entrance script decides", eligible, door.Request{User: "alice", Addr: addr}, door.Room, door.Verdict{Action: door.Queue, Exact: door.Exact{Eligible: []string{"vip"}}}},
		{"a block maybe at a room's join refuses", blockOnly, door.Request{User: "mallory", Addr: addr}, door.Room, door.Verdict{Action: door.Block}},
		{"eligible maybe elsewhere lets on", eligible, door.Request{User: "alice", Addr: addr}, door.Status, door.Verdict{Action: door.Queue}},
		{"on no eligible list", eligible, door.Request{User: "carol", Addr: addr}, door.Join, door.Verdict{Action: door.NotEligible}},
		{"on no eligible list at the claim", eligible, door.Request{User: "carol"}, door.Claim, door.Verdict{Action: door.NotEligible}},
		{"no user and no address is on no list", eligible, door.Request{}, door.Gate, door.Verdict{Action: door.NotEligible}},
		{"a bypass skips eligibility", eligible, door.Request{Path: "/health", User: "carol"}, door.Gate, door.Verdict{Action: door.Bypass, Rule: "health"}},
		{"a sink skips eligibility", eligible, door.Request{Path: "/bots", User: "carol"}, door.Join, door.Verdict{Action: door.Sink, Rule: "bots"}},
		{"a challenge still needs eligibility", eligible, door.Request{Path: "/hard", User: "carol"}, door.Join, door.Verdict{Action: door.NotEligible, Rule: "hard"}},
		{"a maybe-blocked caller on no eligible list is not eligible", eligible, door.Request{User: "mallory"}, door.Join, door.Verdict{Action: door.NotEligible}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := d.Check(tc.cfg, &tc.r, tc.step)
			if got.Action != tc.want.Action || got.Rule != tc.want.Rule || !slices.Equal(got.Exact.Block, tc.want.Exact.Block) || !slices.Equal(got.Exact.Eligible, tc.want.Exact.Eligible) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCheckWithoutViews(t *testing.T) {
	cfg := &event.Config{Door: event.Door{BlockLists: []string{"bad"}, EligibleLists: []string{"vip"}}}
	r := &door.Request{User: "alice"}
	// No lists on the node: every list is empty, so nobody is eligible.
	if got := door.New(nil, nil).Check(cfg, r, door.Join); got.Action != door.NotEligible {
		t.Fatalf("without lists: got %v, want not_eligible", got.Action)
	}
	var nilDoor *door.Door
	if got := nilDoor.Check(cfg, r, door.Join); got.Action != door.Queue {
		t.Fatalf("nil door: got %v, want queue", got.Action)
	}
	if nilDoor.Applies(cfg) || door.New(nil, nil).Applies(&event.Config{}) {
		t.Fatal("Applies: true for a nil door or a sale without a door")
	}
}

func TestRefusals(t *testing.T) {
	cfg := &event.Config{}
	err := door.Verdict{Action: door.NotEligible}.Err(cfg)
	var ne *door.NotEligibleError
	if !errors.Is(err, door.ErrNotEligible) || !errors.As(err, &ne) || ne.Message != event.DefaultNotEligibleMessage {
		t.Fatalf("got %v, want the default message", err)
	}
	cfg.Door.NotEligibleMessage = "members only"
	if errors.As(door.Verdict{Action: door.NotEligible}.Err(cfg), &ne); ne.Message != "members only" {
		t.Fatalf("got %q, want the sale's message", ne.Message)
	}
	if err := (door.Verdict{Action: door.Block}).Err(cfg); err != door.ErrBlocked {
		t.Fatalf("got %v, want ErrBlocked", err)
	}
	for _, a := range []door.Action{door.Queue, door.Bypass, door.Challenge, door.Sink} {
		if err := (door.Verdict{Action: a}).Err(cfg); err != nil {
			t.Fatalf("%v: got %v, want nil", a, err)
		}
	}
}

func TestCheckAllocs(t *testing.T) {
	d := door.New(fakeLists{}, pathRules{})
	none := &event.Config{}
	r := &door.Request{User: "alice", Path: "/x"}
	if n := testing.AllocsPerRun(100, func() { d.Check(none, r, door.Status) }); n != 0 {
		t.Fatalf("a sale without a door: %v allocations, want 0", n)
	}
	listed := &event.Config{Door: event.Door{BlockLists: []string{"bad"}}}
	if n := testing.AllocsPerRun(100, func() { d.Check(listed, r, door.Status) }); n != 0 {
		t.Fatalf("a block list that does not hold the caller: %v allocations, want 0", n)
	}
}

func BenchmarkCheck(b *testing.B) {
	d := door.New(fakeLists{}, pathRules{})
	r := &door.Request{User: "alice", Path: "/x", Addr: netip.MustParseAddr("203.0.113.9")}
	for _, bc := range []struct {
		name string
		cfg  *event.Config
	}{
		{"no-door", &event.Config{}},
		{"block-list", &event.Config{Door: event.Door{BlockLists: []string{"bad"}}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d.Check(bc.cfg, r, door.Status)
			}
		})
	}
}

// unheldLists is a node that holds no list: the ids lists of ids answer
// Unknown to User, the nets lists of networks Unknown to Addr (both, for
// a node that read none).
type unheldLists struct{ ids, nets map[string]bool }

func (u unheldLists) User(list, _ string) door.Membership {
	if u.ids[list] {
		return door.Unknown
	}
	return door.Absent
}
func (u unheldLists) Addr(list string, _ netip.Addr) door.Membership {
	if u.nets[list] {
		return door.Unknown
	}
	return door.Absent
}
func (unheldLists) Hash(user string) uint64 { return uint64(len(user)) }

// TestCheckUnheldLists: a list the node does not hold is never "not on
// it". A block list refuses at every step after the join; at the join a
// list of ids goes to the script, one of networks (or one a request
// without an address cannot tell) refuses, and so does a bypass or a
// sink. An eligibility list goes to the script at the join (a list of
// networks counts as not on it there), as at a room's join, and lets
// the caller on after it.
func TestCheckUnheldLists(t *testing.T) {
	lists := unheldLists{ids: map[string]bool{"bad": true, "vip": true, "cold": true}, nets: map[string]bool{"badnet": true, "office": true, "cold": true}}
	d := door.New(lists, pathRules{})
	ids := &event.Config{Door: event.Door{BlockLists: []string{"bad"}, Rules: []event.Rule{{Name: "health", When: "x", Then: "bypass"}}}}
	nets := &event.Config{Door: event.Door{BlockLists: []string{"badnet"}}}
	cold := &event.Config{Door: event.Door{BlockLists: []string{"cold"}}}
	vip := &event.Config{Door: event.Door{EligibleLists: []string{"vip"}}}
	office := &event.Config{Door: event.Door{EligibleLists: []string{"office"}}}
	addr := netip.MustParseAddr("203.0.113.9")
	for _, step := range []door.Step{door.Status, door.Gate, door.Room, door.Claim} {
		for i, cfg := range []*event.Config{ids, nets, cold} {
			if v := d.Check(cfg, &door.Request{User: "mallory", Addr: addr}, step); v.Action != door.Block {
				t.Errorf("block sale %d at step %d: %+v, want block", i, step, v)
			}
		}
		for i, cfg := range []*event.Config{vip, office} {
			if step == door.Room {
				continue // a way in: below
			}
			if v := d.Check(cfg, &door.Request{User: "bob", Addr: addr}, step); v.Action != door.Queue {
				t.Errorf("eligibility sale %d at step %d: %+v, want queue", i, step, v)
			}
		}
	}
	for _, tc := range []struct {
		name string
		cfg  *event.Config
		r    door.Request
		want door.Verdict
	}{
		{"a list of ids to the script", ids, door.Request{User: "mallory", Addr: addr}, door.Verdict{Action: door.Queue, Exact: door.Exact{Block: []string{"bad"}}}},
		{"no address: nothing tells the kind", ids, door.Request{User: "mallory"}, door.Verdict{Action: door.Block}},
		{"a bypass is decided by no script", ids, door.Request{Path: "/health", User: "mallory", Addr: addr}, door.Verdict{Action: door.Block}},
		{"a list of networks has no copy", nets, door.Request{User: "alice", Addr: addr}, door.Verdict{Action: door.Block}},
		{"a node that read no list", cold, door.Request{User: "alice", Addr: addr}, door.Verdict{Action: door.Block}},
		{"an eligibility list of ids to the script", vip, door.Request{User: "bob", Addr: addr}, door.Verdict{Action: door.Queue, Exact: door.Exact{Eligible: []string{"vip"}}}},
		{"an eligibility list of networks not held refuses", office, door.Request{User: "bob", Addr: addr}, door.Verdict{Action: door.NotEligible}},
	} {
		if got := d.Check(tc.cfg, &tc.r, door.Join); !slices.Equal(got.Exact.Block, tc.want.Exact.Block) || !slices.Equal(got.Exact.Eligible, tc.want.Exact.Eligible) || got.Action != tc.want.Action {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	// A safety-net room's join is a way in, as the join is: its entrance
	// script decides a list of ids; a list of networks not held refuses.
	if got := d.Check(vip, &door.Request{User: "bob", Addr: addr}, door.Room); got.Action != door.Queue || !slices.Equal(got.Exact.Eligible, []string{"vip"}) {
		t.Errorf("an eligibility list of ids at a room: %+v, want the entrance script to decide vip", got)
	}
	if got := d.Check(office, &door.Request{User: "bob", Addr: addr}, door.Room); got.Action != door.NotEligible {
		t.Errorf("an eligibility list of networks not held at a room: %+v, want not_eligible", got)
	}
}
