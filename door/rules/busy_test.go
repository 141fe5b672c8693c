package rules

import (
	"errors"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
)

// TestBusyNetwork: busy_network() reads Request.Busy, alone or with other
// conditions, and holds for no request that leaves Busy false.
func TestBusyNetwork(t *testing.T) {
	e := New(testLists, nil)
	cfg := sale("ev", 1,
		rule("cgnat", `busy_network() && in_network(request.ip, "100.64.0.0/10")`, "challenge"),
		rule("carrier-nat", `busy_network()`, "challenge"),
	)
	for _, c := range []struct {
		ip   string
		busy bool
		want string
	}{
		{"100.64.1.2", false, ""},
		{"203.0.113.7", false, ""},
		{"100.64.1.2", true, "cgnat"},
		{"203.0.113.7", true, "carrier-nat"},
		{"", true, "carrier-nat"},
	} {
		r := request("POST", "/events/ev/join", "", c.ip, "u", nil, nil)
		r.Busy = c.busy
		name, then, ok := e.Match(cfg, r)
		if name != c.want || ok != (c.want != "") || ok && then != door.Challenge {
			t.Errorf("%s busy=%v: Match = %q %v %v, want %q challenge", c.ip, c.busy, name, then, ok, c.want)
		}
	}
	if n := e.EvalErrors(); n != 0 {
		t.Errorf("%d evaluation errors", n)
	}
}

// TestBusyOnlyChallenges: busy_network() in a rule whose then is not
// challenge is refused at save, naming the rule, the line and the column
// of the call (its negation too: the rule would act on every request that
// is not busy, which no busy join asks about).
func TestBusyOnlyChallenges(t *testing.T) {
	e := New(testLists, nil)
	for _, c := range []struct {
		when, then   string
		line, column int
	}{
		{`busy_network()`, "block", 1, 13},
		{`busy_network()`, "bypass", 1, 13},
		{`busy_network()`, "queue", 1, 13},
		{`busy_network()`, "sink", 1, 13},
		{`request.method == "POST" &&` + "\n" + `  !busy_network()`, "bypass", 2, 16}, // CEL places a call at its parenthesis
	} {
		err := e.Compile(sale("ev", 1, rule("nat", c.when, c.then)), nil)
		var re *RuleError
		if !errors.As(err, &re) || !errors.Is(err, ErrInvalidRule) {
			t.Fatalf("%s then %s: Compile = %v, want a *RuleError", c.when, c.then, err)
		}
		if re.Rule != "nat" || re.Line != c.line || re.Column != c.column || !strings.Contains(re.Msg, "then is challenge") {
			t.Errorf("%s then %s: got %q line %d column %d %q, want line %d column %d", c.when, c.then, re.Rule, re.Line, re.Column, re.Msg, c.line, c.column)
		}
	}
	for _, when := range []string{`busy_network()`, `!busy_network() && request.headers["user-agent"] == ""`, `busy_network() && !in_list("office", request.ip)`} {
		if err := e.Compile(sale("ev", 1, rule("nat", when, "challenge")), nil); err != nil {
			t.Errorf("%s then challenge: %v", when, err)
		}
	}
	for _, when := range []string{`busy_network(request.ip)`, `busy_network == true`, `request.busy`} {
		if err := e.Compile(sale("ev", 1, rule("nat", when, "challenge")), nil); !errors.Is(err, ErrInvalidRule) {
			t.Errorf("%s: Compile = %v, want invalid", when, err)
		}
	}
}

// TestBusyChallenges: door.BusyChallenges finds a challenge rule that
// calls busy_network(), and nothing else.
func TestBusyChallenges(t *testing.T) {
	for _, c := range []struct {
		rules []event.Rule
		want  bool
	}{
		{nil, false},
		{[]event.Rule{rule("a", `request.path == "/"`, "challenge")}, false},
		{[]event.Rule{rule("a", `busy_network()`, "challenge")}, true},
		{[]event.Rule{rule("a", `true`, "bypass"), rule("b", `in_network(request.ip, "100.64.0.0/10") && busy_network()`, "challenge")}, true},
	} {
		if got := door.BusyChallenges(sale("ev", 1, c.rules...)); got != c.want {
			t.Errorf("%v: BusyChallenges = %v, want %v", c.rules, got, c.want)
		}
	}
}
