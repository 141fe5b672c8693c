package rules

import (
	"fmt"
	"testing"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
)

// benchRules are 20 realistic rules; the request matches only the last.
var benchRules = []event.Rule{
	rule("health", `request.path == "/healthz" || request.path == "/readyz"`, "bypass"),
	rule("static", `request.path.startsWith("/static/") || request.path.endsWith(".css") || request.path.endsWith(".js")`, "bypass"),
	rule("favicon", `request.path == "/favicon.ico"`, "bypass"),
	rule("partner", `in_network(request.ip, "192.0.2.0/24")`, "bypass"),
	rule("partner-v6", `in_network(request.ip, "2001:db8:2::/48")`, "bypass"),
	rule("office", `in_list("office", request.ip)`, "bypass"),
	rule("crawler", `verified_crawler()`, "bypass"),
	rule("bad-net", `in_network(request.ip, "203.0.113.0/24")`, "block"),
	rule("curl", `request.headers["user-agent"].startsWith("curl/")`, "sink"),
	rule("python", `request.headers["user-agent"].contains("python-requests")`, "sink"),
	rule("no-ua", `busy_network() || request.headers["user-agent"] == ""`, "challenge"),
	rule("debug", `request.params["debug"] == "1"`, "block"),
	rule("admin-path", `request.path.startsWith("/wp-admin")`, "block"),
	rule("post-only", `request.method == "DELETE"`, "block"),
	rule("night", `now.getHours("Europe/Paris") < 3`, "challenge"),
	rule("beta-cookie", `request.cookies["beta"] == "yes"`, "bypass"),
	rule("vip", `in_list("vip", user)`, "bypass"),
	rule("staff-claim", `"staff" in claims["roles"]`, "bypass"),
	rule("other-host", `request.host != "shop.example"`, "block"),
	rule("busy-net", `in_network(request.ip, "100.64.0.0/10") && request.method == "POST"`, "challenge"),
}

// BenchmarkMatch20Rules evaluates 20 rules for a request that only the
// last matches: the door's cost per request, and per rule.
func BenchmarkMatch20Rules(b *testing.B) {
	e := New(testLists, fakeCrawlers{})
	cfg := sale("ev", 1, benchRules...)
	if err := e.Compile(cfg, nil); err != nil {
		b.Fatal(err)
	}
	r := request("POST", "/events/ev/join", "utm_source=mail", "100.64.1.2", "carol",
		map[string]string{"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0"}, map[string]string{"sid": "x"})
	if name, then, ok := e.Match(cfg, r); !ok || name != "busy-net" || then != door.Challenge {
		b.Fatalf("Match = %q %v %v, want busy-net challenge", name, then, ok)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		e.Match(cfg, r)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(benchRules)), "ns/rule")
	if e.EvalErrors() != 0 {
		b.Fatal(fmt.Sprint(e.EvalErrors(), " evaluation errors"))
	}
}
