// Package rules compiles and evaluates a sale's door rules
// (event.Door.Rules): CEL expressions (github.com/google/cel-go) over one
// request, each with the action its match decides. Engine implements
// door.Rules.
//
// # The language
//
// A rule's `when` is a CEL expression of type bool over the variables
// and functions of the tables in docs/configure.md ("Rules"), generated
// from this package's registry (Variables, Functions; `anteroom
// rules-table -w docs/configure.md`). CEL's standard library (operators,
// size, startsWith, endsWith, contains, matches with RE2, timestamps and
// durations) and its strings extension (lowerAscii, split, replace, …)
// are there too; nothing else is.
//
// # Compiled once, cheap to evaluate
//
// Staff saves compile every rule (Engine.Compile): a syntax or type error,
// a `when` that is not a bool, a list the node does not know, a network
// that does not parse, and a rule whose estimated worst-case cost exceeds
// MaxCost are refused, naming the rule, the line and the column
// (*RuleError). Match compiles a sale's rules lazily, once per
// (event id, version), and keeps the programs; a configuration that does
// not compile (saved by an older node) matches nothing and is logged
// once. Evaluation reads the request through a lazy activation: a rule
// that reads only request.path costs no map, no header read and no
// address formatting. A rule whose evaluation fails (its runtime cost
// over RuntimeCostLimit, a claim of another shape) does not match, and is
// counted (Engine.EvalErrors).
//
// # Lists: a maybe counts as on the list
//
// in_list("vip", user) asks the node's filter of a list of user ids,
// which answers "maybe" for every member and for rare false positives
// (package door/lists): a rule counts a maybe as on the list. A rule that
// bypasses the queue for a list can thus let a rare non-member past the
// queue; a block list (event.Door.BlockLists) is the exact tool for
// refusing. Network lists are exact.
//
// A list the node does not hold yet (door.Unknown: its first read of the
// lists failed, or the list's build failed or is running) is neither:
// in_list answers an error that CEL carries only where the outcome
// depends on it (`in_list("vip", user) || true` still holds). A rule
// whose outcome depends on it holds when its then refuses or queues
// (block, challenge, sink, queue) and does not hold when it bypasses:
// whichever way the expression turns the list (`!in_list(...)`), the
// rule errs toward refusing. It is not counted in EvalErrors.
//
// # A busy network
//
// busy_network() reads door.Request.Busy: true only when a join's rate
// limits refused it for its address alone (over the sale's per-IP join
// budget), and web/shopper asks the rules again. Compile accepts it only
// in a rule whose then is challenge: that rule turns the 429 into the
// sale's challenge; any other then would never act on it.
//
// An Engine is safe for concurrent use.
package rules
