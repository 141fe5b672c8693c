package rules

import (
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
)

// TestNew: the environment builds with and without lists and crawlers.
func TestNew(t *testing.T) {
	for _, e := range []*Engine{New(nil, nil), New(testLists, fakeCrawlers{})} {
		if err := e.Compile(sale("ev", 1, rule("r", `request.path == "/"`, "bypass")), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCompileErrors: a bad rule is a *RuleError naming the rule, with the
// line and column (from 1) of the fault.
func TestCompileErrors(t *testing.T) {
	e := New(testLists, nil)
	known := func(l string) bool { return l == "vip" || l == "office" }
	for _, c := range []struct {
		name, when   string
		line, column int
		msg          string
	}{
		{"syntax", `request.path ==`, 1, 16, "Syntax error"},
		{"unknown-var", `request.pth == "/"`, 1, 1, "undeclared reference"},
		{"undeclared", `foo == "x"`, 1, 1, "undeclared reference"},
		{"second-line", "request.path == \"/\" &&\n  request.method == 3", 2, 18, "no matching overload"},
		{"unknown-list", `in_list("nope", user)`, 1, 9, `no list "nope"`},
		{"list-not-constant", `in_list(user, user)`, 1, 9, "constant name"},
		{"bad-list-name", `in_list("Bad Name", user)`, 1, 9, "not a list name"},
		{"bad-network", `in_network(request.ip, "10.0.0.0/33")`, 1, 24, "not a network"},
		{"network-not-constant", `in_network(request.ip, request.query)`, 1, 31, "constant CIDR"},
		{"bad-zone", `now.getHours("Mars/Olympus") < 8`, 1, 14, "not a time zone"},
		{"zone-not-constant", `now.getHours(user) < 8`, 1, 14, "must be a constant"},
		{"wrong-arity", `in_network(request.ip)`, 1, 11, "found no matching overload"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := e.Compile(sale("ev", 1, rule("ok", `true`, "queue"), rule(c.name, c.when, "block")), known)
			var re *RuleError
			if !errors.As(err, &re) || !errors.Is(err, ErrInvalidRule) {
				t.Fatalf("Compile = %v, want a *RuleError", err)
			}
			if re.Rule != c.name || re.Line != c.line || re.Column != c.column || !strings.Contains(re.Msg, c.msg) {
				t.Errorf("got rule %q line %d column %d %q, want %q line %d column %d containing %q", re.Rule, re.Line, re.Column, re.Msg, c.name, c.line, c.column, c.msg)
			}
			if !strings.Contains(err.Error(), `rule "`+c.name+`"`) || !strings.Contains(err.Error(), "column") {
				t.Errorf("Error() = %q names neither the rule nor the column", err)
			}
		})
	}
}

// TestCompileRefusals: a when that is not a bool, an unknown then, and
// in_list on a node without lists are refused.
func TestCompileRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		e    *Engine
		r    event.Rule
		msg  string
	}{
		{"string", New(testLists, nil), rule("s", `request.path`, "block"), "must be a bool"},
		{"int", New(testLists, nil), rule("i", `size(request.path)`, "block"), "must be a bool"},
		{"then", New(testLists, nil), rule("t", `true`, "explode"), "then must be one of"},
		{"no-lists", New(nil, nil), rule("l", `in_list("vip", user)`, "bypass"), "this node has no lists"},
		{"too-long", New(nil, nil), rule("long", strings.Repeat("true && ", 300)+"true", "bypass"), "longer than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.e.Compile(sale("ev", 1, c.r), nil)
			var re *RuleError
			if !errors.As(err, &re) || re.Rule != c.r.Name || !strings.Contains(re.Msg, c.msg) {
				t.Errorf("Compile = %v, want a *RuleError of rule %q containing %q", err, c.r.Name, c.msg)
			}
		})
	}
}

// TestCostLimit: a rule whose estimated cost is over MaxCost is refused
// as possibly slow; a rule scanning one header passes.
func TestCostLimit(t *testing.T) {
	e := New(nil, nil)
	for _, when := range []string{
		// Every parameter against every part of the path: 256 × 8192.
		`request.params.exists(k, request.path.split("/").exists(p, p.contains(k)))`,
		`request.headers["referer"].contains(request.path)`,
		`claims.exists(k, claims[k].exists(v, v.contains(request.path)))`,
	} {
		err := e.Compile(sale("ev", 1, rule("slow", when, "block")), nil)
		var re *RuleError
		if !errors.As(err, &re) || !strings.Contains(re.Msg, "possibly slow") {
			t.Errorf("%s: Compile = %v, want refused as possibly slow", when, err)
		}
	}
	for _, when := range []string{
		`request.headers["user-agent"].contains("bot")`,
		`request.headers["user-agent"].matches("(?i)python|curl|wget")`,
		`request.params.exists(k, k.startsWith("utm_"))`,
	} {
		if err := e.Compile(sale("ev", 1, rule("ok", when, "block")), nil); err != nil {
			t.Errorf("%s: %v", when, err)
		}
	}
}

// TestVariables: every variable reads the request.
func TestVariables(t *testing.T) {
	e := New(testLists, nil)
	r := request("POST", "/events/ev/join", "a=1&b=x%20y&a=2&flag&plus=1+2", "203.0.113.7", "ann",
		map[string]string{"User-Agent": "Mozilla/5.0", "X-Forwarded-Proto": "https"}, map[string]string{"sid": "abc", "Beta": "yes"})
	r.Claims = map[string][]string{"roles": {"staff", "buyer"}, "tier": {"gold"}}
	holds := []string{
		`request.method == "POST"`,
		`request.host == "shop.example"`,
		`request.path == "/events/ev/join"`,
		`request.query == "a=1&b=x%20y&a=2&flag&plus=1+2"`,
		`request.params["a"] == "1"`, // the first of a repeated one
		`request.params["b"] == "x y"`,
		`request.params["plus"] == "1 2"`,
		`request.params["flag"] == ""`,
		`"flag" in request.params`,
		`!("nope" in request.params) && request.params["nope"] == ""`,
		`size(request.params) == 4`,
		`request.params.exists(k, k == "b")`,
		`request.headers["user-agent"] == "Mozilla/5.0"`,
		`request.headers["User-Agent"] == "Mozilla/5.0"`, // names are case-insensitive
		`request.headers["USER-AGENT"].startsWith("Mozilla")`,
		`"x-forwarded-proto" in request.headers`,
		`request.headers["x-missing"] == "" && !("x-missing" in request.headers)`,
		`request.cookies["sid"] == "abc"`,
		`request.cookies["Beta"] == "yes" && request.cookies["beta"] == ""`, // cookies are case-sensitive
		`request.cookies["missing"] == ""`,
		`!("missing" in request.cookies)`,
		`request.ip == "203.0.113.7"`,
		`user == "ann"`,
		`"staff" in claims["roles"]`,
		`claims["tier"] == ["gold"]`,
		`size(claims["missing"]) == 0`,
		`!("missing" in claims) && "roles" in claims`,
		`claims.exists(k, k == "tier")`,
		`now == timestamp("2026-11-27T09:30:00Z")`,
		`now.getHours() == 9 && now.getHours("Europe/Paris") == 10 && now.getHours("+05:30") == 15`,
		`now.getDayOfWeek("Asia/Tokyo") == 5 && now.getMinutes("-01:15") == 15`,
		`now - timestamp("2026-11-27T09:00:00Z") == duration("30m")`,
		`request.path.split("/")[1] == "events"`,
		`request.headers["user-agent"].lowerAscii().contains("mozilla")`,
	}
	for _, when := range holds {
		name, _, ok := e.Match(sale("ev-"+when, 1, rule("r", when, "block")), r)
		if !ok || name != "r" {
			t.Errorf("%s: does not hold", when)
		}
	}
	if n := e.EvalErrors(); n != 0 {
		t.Errorf("%d evaluation errors", n)
	}
}

// TestEmptyRequest: a request with no address, no headers, no cookies
// and no claims reads empty values, without errors.
func TestEmptyRequest(t *testing.T) {
	e := New(testLists, fakeCrawlers{})
	r := &door.Request{Method: "GET", Path: "/"}
	for _, when := range []string{
		`request.ip == ""`, `user == ""`, `request.headers["user-agent"] == ""`, `request.cookies["sid"] == ""`,
		`size(claims) == 0`, `size(request.params) == 0`, `!in_network(request.ip, "0.0.0.0/0")`, `!verified_crawler()`,
		`!in_list("office", request.ip)`, `!in_list("vip", user)`,
	} {
		if _, _, ok := e.Match(sale("empty-"+when, 1, rule("r", when, "block")), r); !ok {
			t.Errorf("%s: does not hold", when)
		}
	}
	if n := e.EvalErrors(); n != 0 {
		t.Errorf("%d evaluation errors", n)
	}
}

// TestUnlistedMaps: headers and cookies cannot be listed: such a rule
// fails to evaluate, which is no match, counted.
func TestUnlistedMaps(t *testing.T) {
	e := New(nil, nil)
	r := request("GET", "/", "", "", "", map[string]string{"a": "b"}, nil)
	for i, when := range []string{`size(request.headers) > 0`, `request.cookies.exists(k, k == "x")`} {
		if _, _, ok := e.Match(sale("ev", int64(i+1), rule("r", when, "block")), r); ok {
			t.Errorf("%s matched", when)
		}
	}
	if n := e.EvalErrors(); n != 2 {
		t.Errorf("EvalErrors = %d, want 2", n)
	}
}

// TestFunctions: in_list over user ids (a maybe counts) and networks,
// in_network over IPv4 and IPv6 (IPv4-mapped addresses as IPv4), and
// verified_crawler.
func TestFunctions(t *testing.T) {
	crawler := netip.MustParseAddr("66.249.66.1")
	e := New(testLists, fakeCrawlers{crawler: true})
	for _, c := range []struct {
		ip, user, when string
		want           bool
	}{
		{"192.0.2.1", "ann", `in_list("vip", user)`, true}, // Maybe counts as on the list
		{"192.0.2.1", "bob", `in_list("vip", user)`, false},
		{"192.0.2.1", "bob", `in_list("ev.friends", user)`, true},
		{"198.51.100.9", "", `in_list("office", request.ip)`, true},
		{"198.51.101.9", "", `in_list("office", request.ip)`, false},
		{"2001:db8:1::42", "", `in_list("office", request.ip)`, true},
		{"::ffff:198.51.100.9", "", `in_list("office", request.ip)`, true},
		{"2001:db8:1::42", "", `in_list("office", "2001:db8:1::7")`, true}, // an address not from request.ip
		{"192.0.2.1", "", `in_list("office", "ann")`, false},
		{"10.1.2.3", "", `in_network(request.ip, "10.0.0.0/8")`, true},
		{"11.1.2.3", "", `in_network(request.ip, "10.0.0.0/8")`, false},
		{"10.1.2.3", "", `in_network(request.ip, "10.1.2.3/32")`, true},
		{"10.1.2.3", "", `in_network(request.ip, "10.1.2.9/24")`, true}, // host bits ignored
		{"::ffff:10.1.2.3", "", `in_network(request.ip, "10.0.0.0/8")`, true},
		{"2001:db8::1", "", `in_network(request.ip, "2001:db8::/32")`, true},
		{"2001:db9::1", "", `in_network(request.ip, "2001:db8::/32")`, false},
		{"2001:db8::1", "", `in_network(request.ip, "10.0.0.0/8")`, false},
		{"10.1.2.3", "", `in_network(request.ip, "::/0")`, false}, // an IPv4 is in no IPv6 network
		{"10.1.2.3", "", `in_network("10.9.9.9", "10.0.0.0/8")`, true},
		{"10.1.2.3", "", `in_network("not an address", "10.0.0.0/8")`, false},
		{"10.1.2.3", "", `in_network(request.headers["x-real-ip"], "10.0.0.0/8")`, false},
		{"66.249.66.1", "", `verified_crawler()`, true},
		{"::ffff:66.249.66.1", "", `verified_crawler()`, true},
		{"66.249.66.2", "", `verified_crawler()`, false},
	} {
		r := request("GET", "/", "", c.ip, c.user, nil, nil)
		_, _, ok := e.Match(sale(c.ip+c.user+c.when, 1, rule("r", c.when, "block")), r)
		if ok != c.want {
			t.Errorf("%s for %s %q: %v, want %v", c.when, c.ip, c.user, ok, c.want)
		}
	}
	if n := e.EvalErrors(); n != 0 {
		t.Errorf("%d evaluation errors", n)
	}
	r := request("GET", "/", "", "66.249.66.1", "", nil, nil)
	if _, _, ok := New(nil, nil).Match(sale("ev", 1, rule("r", `verified_crawler()`, "bypass")), r); ok {
		t.Error("verified_crawler() holds on a node without crawler verification")
	}
}

// TestFirstMatchWins: the first rule that holds decides; none holding is
// no match; a rule whose evaluation fails does not hold, and the next
// ones are still tried.
func TestFirstMatchWins(t *testing.T) {
	e := New(nil, nil)
	r := request("GET", "/static/app.js", "", "10.0.0.1", "", nil, nil)
	cfg := sale("ev", 1,
		rule("fails", `int(request.path) > 0`, "block"), // evaluation error
		rule("never", `request.method == "POST"`, "block"),
		rule("static", `request.path.startsWith("/static/")`, "bypass"),
		rule("net", `in_network(request.ip, "10.0.0.0/8")`, "sink"),
	)
	name, then, ok := e.Match(cfg, r)
	if !ok || name != "static" || then != door.Bypass {
		t.Errorf("Match = %q %v %v, want static bypass", name, then, ok)
	}
	if n := e.EvalErrors(); n != 1 {
		t.Errorf("EvalErrors = %d, want 1", n)
	}
	if _, _, ok := e.Match(cfg, request("POST", "/x", "", "192.0.2.1", "", nil, nil)); !ok {
		t.Error("never: does not hold for a POST")
	}
	if name, then, ok := e.Match(cfg, request("GET", "/x", "", "192.0.2.1", "", nil, nil)); ok {
		t.Errorf("Match = %q %v, want none", name, then)
	}
	if name, then, ok := e.Match(sale("none", 1), r); ok || then != door.Queue {
		t.Errorf("no rules: %q %v %v", name, then, ok)
	}
	for _, th := range []string{"queue", "bypass", "block", "challenge", "sink"} {
		_, then, _ := e.Match(sale("then-"+th, 1, rule("r", "true", th)), r)
		if then.String() != th {
			t.Errorf("then %s: %v", th, then)
		}
	}
}

// TestCacheByVersion: the programs are kept per event id and version: a
// new version is compiled afresh, an invalid one matches nothing.
func TestCacheByVersion(t *testing.T) {
	e := New(nil, nil)
	r := request("GET", "/a", "", "", "", nil, nil)
	v1 := sale("ev", 1, rule("a", `request.path == "/a"`, "block"))
	if name, _, _ := e.Match(v1, r); name != "a" {
		t.Fatalf("v1: %q", name)
	}
	// Same id and version, other rules (not possible in the store): the
	// kept programs answer.
	if name, _, _ := e.Match(sale("ev", 1, rule("b", `true`, "bypass")), r); name != "a" {
		t.Errorf("same version: %q, want the kept a", name)
	}
	v2 := sale("ev", 2, rule("b", `request.path == "/a"`, "bypass"))
	if name, then, _ := e.Match(v2, r); name != "b" || then != door.Bypass {
		t.Errorf("v2: %q %v, want b bypass", name, then)
	}
	v3 := sale("ev", 3, rule("c", `request.path ==`, "block"))
	for range 3 {
		if _, _, ok := e.Match(v3, r); ok {
			t.Error("an invalid version matched")
		}
	}
	if n := e.Invalid(); n != 1 {
		t.Errorf("Invalid = %d, want 1 (compiled and logged once)", n)
	}
	if name, _, _ := e.Match(sale("ev", 4, rule("d", `true`, "sink")), r); name != "d" {
		t.Errorf("v4 after an invalid v3: %q", name)
	}
}

// TestTry: the tester compiles rules not saved yet, and refuses a bad one.
func TestTry(t *testing.T) {
	e := New(nil, nil)
	r := request("GET", "/healthz", "", "", "", nil, nil)
	name, then, ok, err := e.Try(sale("ev", 1, rule("health", `request.path == "/healthz"`, "bypass")), r)
	if err != nil || !ok || name != "health" || then != door.Bypass {
		t.Errorf("Try = %q %v %v %v", name, then, ok, err)
	}
	if _, _, _, err := e.Try(sale("ev", 1, rule("bad", `request.path ==`, "bypass")), r); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("Try of a bad rule: %v", err)
	}
}

// TestClipped: values longer than the estimate assumes are cut to it, so
// a rule's cost stays within its estimate; the start still matches.
func TestClipped(t *testing.T) {
	e := New(nil, nil)
	long := "curl/" + strings.Repeat("é", maxString)
	r := request("GET", "/", "", "", "", map[string]string{"user-agent": long}, nil)
	for _, when := range []string{
		`request.headers["user-agent"].startsWith("curl/")`,
		`size(request.headers["user-agent"]) <= 8192`,
	} {
		if _, _, ok := e.Match(sale("clip-"+when, 1, rule("r", when, "sink")), r); !ok {
			t.Errorf("%s: does not hold", when)
		}
	}
}

// TestConcurrentMatch: many goroutines match many requests over rules
// that read every variable, under -race, each getting its own answer;
// new versions arrive meanwhile.
func TestConcurrentMatch(t *testing.T) {
	e := New(testLists, fakeCrawlers{netip.MustParseAddr("66.249.66.1"): true})
	rules := []event.Rule{
		rule("crawler", `verified_crawler()`, "bypass"),
		rule("vip", `in_list("vip", user) && request.cookies["sid"] != ""`, "bypass"),
		rule("net", `in_network(request.ip, "10.0.0.0/8") && request.params["x"] == "1"`, "block"),
		rule("ua", `request.headers["user-agent"].contains("bot")`, "sink"),
	}
	reqs := []struct {
		r    *door.Request
		want string
	}{
		{request("GET", "/", "", "66.249.66.1", "", nil, nil), "crawler"},
		{request("GET", "/", "", "192.0.2.1", "ann", nil, map[string]string{"sid": "s"}), "vip"},
		{request("GET", "/", "x=1", "10.2.3.4", "bob", nil, nil), "net"},
		{request("GET", "/", "x=2", "10.2.3.4", "bob", map[string]string{"User-Agent": "a bot"}, nil), "ua"},
		{request("GET", "/", "", "192.0.2.1", "bob", nil, nil), ""},
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 2000 {
				version := int64(1 + i/500) // the configuration changes under the load
				c := reqs[(g+i)%len(reqs)]
				name, _, _ := e.Match(sale("ev", version, rules...), c.r)
				if name != c.want {
					t.Errorf("goroutine %d: %q, want %q", g, name, c.want)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := e.EvalErrors(); n != 0 {
		t.Errorf("%d evaluation errors", n)
	}
}
