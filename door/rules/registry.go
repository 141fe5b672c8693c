package rules

import "github.com/google/cel-go/cel"

// Doc documents one variable or function of the rule language: the
// generated tables of docs/configure.md are made of these.
type Doc struct {
	// Name is how a rule writes it ("request.path", "in_list").
	Name string
	// Signature is its type, or a function's arguments and result.
	Signature string
	// Doc says what it is, in one or two sentences.
	Doc string
}

// variable is one of the rule variables: its documentation and its CEL
// type. The activation resolves it by Name.
type variable struct {
	Doc
	typ *cel.Type
}

// The names the activation resolves.
const (
	varMethod  = "request.method"
	varHost    = "request.host"
	varPath    = "request.path"
	varQuery   = "request.query"
	varParams  = "request.params"
	varHeaders = "request.headers"
	varCookies = "request.cookies"
	varIP      = "request.ip"
	varUser    = "user"
	varClaims  = "claims"
	varSignals = "signals"
	varNow     = "now"
	// varCrawler is what verified_crawler() expands to: a name no rule
	// can write ('@' does not parse), resolved only when a rule calls it.
	varCrawler = "@verified_crawler"
	// varBusy is what busy_network() expands to, the same way.
	varBusy = "@busy_network"
)

var stringMap = cel.MapType(cel.StringType, cel.StringType)

// variables are the rule variables, in the order the docs list them.
var variables = []variable{
	{Doc{varMethod, "string", `The request's method, upper case: "GET".`}, cel.StringType},
	{Doc{varHost, "string", `The Host the request names, as sent: "shop.example".`}, cel.StringType},
	{Doc{varPath, "string", `The path, without the query: "/static/app.js".`}, cel.StringType},
	{Doc{varQuery, "string", `The raw query, without its '?': "a=1&b=2".`}, cel.StringType},
	{Doc{varParams, "map(string, string)", `The query's parameters, decoded; a repeated one reads as its first value, a missing one as "". Test presence with "utm" in request.params.`}, stringMap},
	{Doc{varHeaders, "map(string, string)", `The request headers by name, case-insensitive (write them in lower case): request.headers["user-agent"]. A missing one reads as "", and "name" in request.headers is true only for a non-empty one. They cannot be listed or counted.`}, stringMap},
	{Doc{varCookies, "map(string, string)", `The cookies by name (case-sensitive); a missing one reads as "". They cannot be listed or counted.`}, stringMap},
	{Doc{varIP, "string", `The client's address (behind trusted proxies, the one they name): "203.0.113.7", "2001:db8::1"; "" when unknown.`}, cel.StringType},
	{Doc{varUser, "string", `The caller's user id, "" where the request names none.`}, cel.StringType},
	{Doc{varClaims, "map(string, list(string))", `The identity token's claims (jwt identity mode), each as a list of strings: "admin" in claims["roles"]. A missing claim reads as []. Any claim of the token can be read, not only those the sale's lanes name: "true" in claims.phone_verified.`}, cel.MapType(cel.StringType, cel.ListType(cel.StringType))},
	{Doc{varSignals, "map(string, bool)", `Whether the request carries each of the sale's signals (device, payment, phone, address) from the source the sale configures for it (signals.<name>.source: a trusted proxy's header, a header the shop signed for this sale and user, or a claim of the identity token): signals.phone is false for a forged, stale, untrusted or missing one, and for a signal the sale has no source for. Read them by name; they cannot be listed.`}, cel.MapType(cel.StringType, cel.BoolType)},
	{Doc{varNow, "timestamp", `The request's instant on the node's clock: now > timestamp("2026-11-27T09:00:00Z"), now.getHours("Europe/Paris") < 8.`}, cel.TimestampType},
}

// functions document the rule functions; env declares them.
var functions = []Doc{
	{"in_list", "in_list(list string, value string) bool", `Whether value is on list (a constant name the node knows). A list of user ids answers from the node's filter: a "maybe" (a member, or a rare false positive) counts as on it. For a list of networks, value is an address: in_list("office", request.ip).`},
	{"in_network", "in_network(ip string, network string) bool", `Whether address ip is in network, a constant CIDR, IPv4 or IPv6: in_network(request.ip, "10.0.0.0/8"), in_network(request.ip, "2001:db8::/32"). An ip that does not parse is in no network.`},
	{"verified_crawler", "verified_crawler() bool", `Whether the client's address belongs to a search-engine crawler verified by reverse and forward DNS (never by user agent). False while the address is being looked up, and on a node without crawler verification.`},
	{fnBusy, "busy_network() bool", `Whether the client's address is over the sale's per-IP join budget (limits.join.ip): true only at a join the budget refused for that alone, which the rules are asked again for; false everywhere else. Only a rule whose then is challenge may call it: that rule turns the join's 429 into the sale's challenge (its captcha, else a proof of work), and a solved challenge joins within limits.busy_network (a carrier NAT is many people).`},
	{"standard", "CEL's standard library", `Operators (== != < <= && || ! ?: in + -), size, startsWith, endsWith, contains, matches (RE2), int, string, timestamp, duration and the timestamp accessors (getHours, getDayOfWeek, … with a time zone).`},
	{"strings", "CEL's strings extension", `charAt, indexOf, lastIndexOf, lowerAscii, upperAscii, replace, split, substring, trim, join, format, quote, reverse.`},
}

// Variables documents the rule variables, in the order of the docs.
func Variables() []Doc {
	out := make([]Doc, len(variables))
	for i, v := range variables {
		out[i] = v.Doc
	}
	return out
}

// Functions documents the rule functions, then the standard libraries a
// rule may use.
func Functions() []Doc { return append([]Doc(nil), functions...) }
