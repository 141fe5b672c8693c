package node_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/report"
)

// The report's door section on a real node (real Redis and NATS, the
// node's CEL engine): matches per rule at every step that asks the door,
// the joins it refused or sank, and the lottery among pre-registered
// users.

// gateAs is a gate request whose X-Test-Door header names rule.
func gateAs(t *testing.T, base, rule string) nodetest.Answer {
	t.Helper()
	return nodetest.Call(t, http.MethodGet, base+"/gate", map[string]string{"X-Test-Door": rule}, nil)
}

// TestDoorReportCountsRules: a sale with two rules; requests match
// "partner" (bypass) at two joins, three gate requests and a claim, and
// "bots" (sink) at three joins and one status poll; requests no rule
// matches count nothing. The report counts exactly that per rule, in the
// sale's order, and the joins the door refused (a listed user) and sank,
// in the JSON and the CSV; the rules' matches are not among the
// refusals.
func TestDoorReportCountsRules(t *testing.T) {
	n, _, l := doorNode(t, false, true)
	sale := openSale(10, 1, 0, 0, 100)
	sale["door"] = map[string]any{
		"rules":       []map[string]string{rule("partner", "bypass"), rule("bots", "sink"), rule("unused", "block")},
		"block_lists": []string{"resellers"},
	}
	nodetest.CreateSale(t, n, "rep", sale)
	l.set(t, "rep", "resellers", "mallory", true)
	base := n.URL() + "/events/rep"

	var token string
	for _, u := range []string{"p1", "p2"} { // partner: 2 joins
		a := nodetest.Call(t, http.MethodPost, base+"/join", with(user(u), "X-Test-Door", "partner"), nil)
		if a.Status != http.StatusOK || nodetest.Str(a.Body, "admission_token") == "" {
			t.Fatalf("bypass join: %d %s", a.Status, a.Raw)
		}
		token = nodetest.Str(a.Body, "admission_token")
	}
	for range 3 { // partner: 3 gate requests
		if g := gateAs(t, base, "partner"); g.Status != http.StatusNoContent {
			t.Fatalf("bypass gate: %d %s", g.Status, g.Raw)
		}
	}
	// partner: 1 claim (a bypass claims as the queue would).
	if c := nodetest.Call(t, http.MethodPost, base+"/claim", with(with(user("p2"), "Authorization", "Bearer "+token), "X-Test-Door", "partner"), nil); c.Status != http.StatusCreated {
		t.Fatalf("claim: %d %s", c.Status, c.Raw)
	}
	var sunk string
	for _, u := range []string{"b1", "b2", "b3"} { // bots: 3 joins, sunk
		a := nodetest.Call(t, http.MethodPost, base+"/join", with(user(u), "X-Test-Door", "bots"), nil)
		if a.Status != http.StatusOK {
			t.Fatalf("sunk join: %d %s", a.Status, a.Raw)
		}
		sunk = nodetest.Str(a.Body, "ticket")
	}
	poll := func(hdr map[string]string) {
		t.Helper()
		if s := nodetest.Call(t, http.MethodGet, base+"/status", hdr, nil); s.Status != http.StatusOK {
			t.Fatalf("status: %d %s", s.Status, s.Raw)
		}
	}
	poll(map[string]string{"Authorization": "Bearer " + sunk, "X-Test-Door": "bots"}) // bots: 1 poll
	poll(map[string]string{"Authorization": "Bearer " + sunk})                        // sunk, but no rule: 0
	// No rule: a plain join, a poll, a gate request, a header naming no
	// rule; a listed user refused by the block list (no rule decided).
	q := nodetest.Call(t, http.MethodPost, base+"/join", user("q"), nil)
	if q.Status != http.StatusOK {
		t.Fatalf("plain join: %d %s", q.Status, q.Raw)
	}
	poll(map[string]string{"Authorization": "Bearer " + nodetest.Str(q.Body, "ticket")})
	if g := gateAs(t, base, "nobody"); g.Status != http.StatusUnauthorized {
		t.Fatalf("gate without a rule: %d %s", g.Status, g.Raw)
	}
	if b := nodetest.Call(t, http.MethodPost, base+"/join", with(user("mallory"), "X-Test-Door", "partner"), nil); b.Status != http.StatusForbidden {
		t.Fatalf("listed join: %d %s, want 403 blocked", b.Status, b.Raw)
	}

	r := getReport(t, n, "rep") // the report flushes this node's counts first
	want := report.Door{
		Rules: []report.RuleMatches{
			{Rule: "partner", Then: "bypass", Matches: 6},
			{Rule: "bots", Then: "sink", Matches: 4},
			{Rule: "unused", Then: "block", Matches: 0},
		},
		Blocked: 1, Sunk: 3, EligibleLists: []string{},
	}
	if !reflect.DeepEqual(r.Door, want) {
		t.Fatalf("door section %+v, want %+v", r.Door, want)
	}
	for _, x := range r.Refusals {
		if x.Reason[:5] == report.RulePrefix {
			t.Errorf("a rule's matches among the refusals: %+v", x)
		}
	}
	checkReportCSV(t, n, "rep", map[string]string{
		"door:rule:partner/matches": "6", "door:rule:partner/then": "bypass",
		"door:rule:bots/matches": "4", "door:rule:unused/matches": "0",
		"door/blocked": "1", "door/not_eligible": "0", "door/sunk": "3",
		"door/pre_registered_lottery": "false",
	})
}

// TestDoorReportRulesChangedMidSale: rules renamed and removed while the
// sale runs still report what they matched (marked removed, after the
// sale's rules); the renamed rule counts from its new name.
func TestDoorReportRulesChangedMidSale(t *testing.T) {
	n, _, _ := doorNode(t, false, true)
	sale := openSale(10, 1, 0, 0, 100)
	sale["door"] = map[string]any{"rules": []map[string]string{rule("assets", "bypass"), rule("health", "bypass")}}
	nodetest.CreateSale(t, n, "mid", sale)
	base := n.URL() + "/events/mid"
	for _, name := range []string{"assets", "assets", "health"} {
		if g := gateAs(t, base, name); g.Status != http.StatusNoContent {
			t.Fatalf("gate %s: %d %s", name, g.Status, g.Raw)
		}
	}
	// assets becomes static; health is removed.
	sale["door"] = map[string]any{"rules": []map[string]string{rule("static", "bypass")}}
	raw, _ := json.Marshal(sale)
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/mid", map[string]string{"Authorization": "Bearer " + n.AdminToken}, raw); a.Status != http.StatusOK {
		t.Fatalf("update: %d %s", a.Status, a.Raw)
	}
	// Until the node has the new rules static matches nothing; its first
	// 204 is its one match.
	nodetest.WaitFor(t, "the renamed rule", 10*time.Second, func() bool {
		return gateAs(t, base, "static").Status == http.StatusNoContent
	})
	if g := gateAs(t, base, "health"); g.Status != http.StatusUnauthorized {
		t.Fatalf("a removed rule still bypasses: %d %s", g.Status, g.Raw)
	}
	want := []report.RuleMatches{
		{Rule: "static", Then: "bypass", Matches: 1},
		{Rule: "assets", Matches: 2, Removed: true},
		{Rule: "health", Matches: 1, Removed: true},
	}
	if got := getReport(t, n, "mid").Door.Rules; !reflect.DeepEqual(got, want) {
		t.Fatalf("rules %+v, want %+v", got, want)
	}
	checkReportCSV(t, n, "mid", map[string]string{"door:rule:assets/removed": "true", "door:rule:assets/matches": "2", "door:rule:static/removed": "false"})
}

// TestDoorReportPreRegisteredLottery: a lottery with an eligibility list
// is a lottery among pre-registered users, and the report says so (and
// counts the registration it refused); a lottery without a list, and a
// first-come sale with one, are not.
func TestDoorReportPreRegisteredLottery(t *testing.T) {
	n, _, l := doorNode(t, false, true)
	for _, c := range []struct {
		ev, mode string
		lists    []string
		want     bool
	}{
		{"prereg", "lottery", []string{"registered"}, true},
		{"openlot", "lottery", nil, false},
		{"listed", "fcfs", []string{"registered"}, false},
	} {
		sale := openSale(10, 1, 30*time.Minute, 0, 100)
		sale["mode"] = c.mode
		if c.lists != nil {
			sale["door"] = map[string]any{"eligible_lists": c.lists}
		}
		nodetest.CreateSale(t, n, c.ev, sale)
		l.set(t, c.ev, "registered", "alice", true)
		for _, u := range []string{"alice", "carol"} {
			nodetest.Call(t, http.MethodPost, n.URL()+"/events/"+c.ev+"/join", user(u), nil)
		}
		d := getReport(t, n, c.ev).Door
		if d.PreRegisteredLottery != c.want || !reflect.DeepEqual(d.EligibleLists, append([]string{}, c.lists...)) {
			t.Errorf("%s (%s, lists %v): pre_registered_lottery %v, eligible_lists %v; want %v", c.ev, c.mode, c.lists, d.PreRegisteredLottery, d.EligibleLists, c.want)
		}
		if wantRefused := map[bool]int64{true: 1, false: 0}[c.lists != nil]; d.NotEligible != wantRefused {
			t.Errorf("%s: not_eligible %d, want %d (carol is on no list)", c.ev, d.NotEligible, wantRefused)
		}
	}
	checkReportCSV(t, n, "prereg", map[string]string{"door/pre_registered_lottery": "true", "door/eligible_lists": "registered", "door/not_eligible": "1"})
}

// TestDoorReportCountsBasicJoins: the basic page's join form meets the
// same door, and the report counts it as the JSON join's: a listed user's
// refusal as join.blocked (the page answers it itself, so the edge's
// count once missed it), a sunk join as join.sink and its rule's match.
func TestDoorReportCountsBasicJoins(t *testing.T) {
	n, _, l := doorNode(t, false, true)
	sale := openSale(10, 1, 0, 0, 100)
	sale["door"] = map[string]any{"rules": []map[string]string{rule("bots", "sink")}, "block_lists": []string{"resellers"}}
	nodetest.CreateSale(t, n, "form", sale)
	l.set(t, "form", "resellers", "mallory", true)
	post := func(who string, extra ...string) nodetest.Answer {
		t.Helper()
		lobby := nodetest.Call(t, http.MethodGet, n.URL()+"/e/form/basic", user(who), nil)
		form := match1(basicForm, string(lobby.Raw))
		if form == "" {
			t.Fatalf("the lobby of %s: %d %.300s, want the join form", who, lobby.Status, lobby.Raw)
		}
		hdr := with(user(who), "Content-Type", "application/x-www-form-urlencoded")
		hdr = with(with(hdr, "Origin", n.URL()), "Sec-Fetch-Site", "same-origin")
		if len(extra) == 2 {
			hdr = with(hdr, extra[0], extra[1])
		}
		return nodetest.Call(t, http.MethodPost, n.URL()+"/e/form/basic/join", hdr, []byte(url.Values{"form": {form}}.Encode()))
	}
	if a := post("mallory"); a.Status != http.StatusForbidden {
		t.Fatalf("listed basic join: %d %.300s, want 403", a.Status, a.Raw)
	}
	if a := post("bot", "X-Test-Door", "bots"); a.Status != http.StatusOK { // 303 to the page, followed
		t.Fatalf("sunk basic join: %d %.300s, want the page", a.Status, a.Raw)
	}
	d := getReport(t, n, "form").Door
	if d.Blocked != 1 || d.Sunk != 1 || len(d.Rules) != 1 || d.Rules[0].Matches != 1 {
		t.Fatalf("door section %+v, want 1 blocked, 1 sunk, bots matched once", d)
	}
}

// TestDoorReportCountsRoomJoins: a safety-net room's join asks the door
// (door.Room), and the room's report counts its rules' matches as a
// sale's: two bypassed joins, one blocked (a refused join too), and a
// plain join that no rule decides.
func TestDoorReportCountsRoomJoins(t *testing.T) {
	n, _, _ := doorNode(t, false, true)
	room := safetyNet(5, 60, 100)
	room["door"] = map[string]any{"rules": []map[string]string{rule("partner", "bypass"), rule("no", "block")}}
	nodetest.CreateSale(t, n, "site", room)
	base := n.URL() + "/events/site"
	for _, c := range []struct {
		who, rule string
		want      int
	}{{"p1", "partner", http.StatusOK}, {"p2", "partner", http.StatusOK}, {"x", "no", http.StatusForbidden}, {"v", "", http.StatusOK}} {
		hdr := user(c.who)
		if c.rule != "" {
			hdr = with(hdr, "X-Test-Door", c.rule)
		}
		var a nodetest.Answer
		nodetest.WaitFor(t, "the room in the node's view", 10*time.Second, func() bool {
			a = nodetest.Call(t, http.MethodPost, base+"/join", hdr, nil)
			return a.Status != http.StatusNotFound
		})
		if a.Status != c.want {
			t.Fatalf("room join of %s as %q: %d %s, want %d", c.who, c.rule, a.Status, a.Raw, c.want)
		}
	}
	want := []report.RuleMatches{{Rule: "partner", Then: "bypass", Matches: 2}, {Rule: "no", Then: "block", Matches: 1}}
	var d report.Door
	nodetest.WaitFor(t, "the room's report", 10*time.Second, func() bool {
		d = getReport(t, n, "site").Door
		return d.Rules != nil
	})
	if !reflect.DeepEqual(d.Rules, want) || d.Blocked != 1 {
		t.Fatalf("room's door section %+v, want rules %+v and 1 blocked", d, want)
	}
}
