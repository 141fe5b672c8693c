package rules

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// Cost limits, in CEL's cost units (about one for a comparison, one for
// every ten characters a string function scans).
const (
	// MaxCost is the most a rule's estimated worst-case cost may be:
	// a rule over it is refused at save as possibly slow. The estimate
	// takes every string as long as maxString and every map as large as
	// maxEntries.
	MaxCost = 10_000
	// RuntimeCostLimit stops the evaluation of a rule estimated over
	// trackAbove that goes beyond it: the rule does not match. Tracking
	// the cost of an evaluation makes it several times slower (3 µs a
	// rule instead of 0.5, 139 allocations for 20 rules instead of 11),
	// and the estimate is already a bound on a cheap rule's cost: the
	// request's values are clipped to the sizes the estimate assumes.
	RuntimeCostLimit = MaxCost
	// trackAbove is the estimated cost over which an evaluation is
	// tracked and stopped at RuntimeCostLimit.
	trackAbove = 2000
)

// Sizes the cost estimate assumes, and to which the activation clips the
// request's values (a request's whole header fits in the server's read
// buffer: fiber's default is 4 KB): strings of at most maxString bytes,
// maps and lists of at most maxEntries.
const (
	maxString  = 8192
	maxEntries = 256
)

// ErrInvalidRule is what every *RuleError wraps: a rule that does not
// compile, answered 400 invalid_rule naming the rule and the column.
var ErrInvalidRule = errors.New("rules: invalid rule")

// RuleError is a rule refused by Compile.
type RuleError struct {
	// Rule is the rule's name.
	Rule string
	// Line and Column locate the fault in the rule's `when`, from 1; 0
	// when it is the whole rule's (its type, its cost, its then).
	Line, Column int
	// Msg says what is wrong.
	Msg string
}

// Error names the rule, the line and the column, and the fault.
func (e *RuleError) Error() string {
	if e.Line == 0 {
		return "rule " + strconv.Quote(e.Rule) + ": " + e.Msg
	}
	return "rule " + strconv.Quote(e.Rule) + ", line " + strconv.Itoa(e.Line) + ", column " + strconv.Itoa(e.Column) + ": " + e.Msg
}

// Unwrap is ErrInvalidRule.
func (e *RuleError) Unwrap() error { return ErrInvalidRule }

// program is one compiled rule.
type program struct {
	name string
	then door.Action
	prg  cel.Program
}

// actions are the rules' thens by name.
var actions = map[string]door.Action{
	"queue": door.Queue, "bypass": door.Bypass, "block": door.Block, "challenge": door.Challenge, "sink": door.Sink,
}

// Compile compiles every rule of cfg.Door.Rules and returns the first
// fault as a *RuleError: a syntax or type error, a `when` that is not a
// bool, an in_list whose list is not a constant accepted by known (nil
// known accepts every valid list name) or on a node without lists, an
// in_network whose network is not a constant CIDR, an estimated cost over
// MaxCost, an unknown then. It keeps nothing: Match compiles what it
// evaluates.
func (e *Engine) Compile(cfg *event.Config, known func(list string) bool) error {
	_, err := e.compile(cfg.Door.Rules, known)
	return err
}

// compile compiles rules in order.
func (e *Engine) compile(rules []event.Rule, known func(list string) bool) ([]program, error) {
	out := make([]program, 0, len(rules))
	for _, r := range rules {
		then, ok := actions[r.Then]
		if !ok {
			return nil, &RuleError{Rule: r.Name, Msg: fmt.Sprintf("then must be one of %q", event.Thens)}
		}
		prg, err := e.compileRule(r, known)
		if err != nil {
			return nil, err
		}
		out = append(out, program{name: r.Name, then: then, prg: prg})
	}
	return out, nil
}

// compileRule compiles one rule's when into a program.
func (e *Engine) compileRule(r event.Rule, known func(list string) bool) (cel.Program, error) {
	if len(r.When) > event.MaxRuleBytes {
		return nil, &RuleError{Rule: r.Name, Msg: fmt.Sprintf("when is longer than %d bytes", event.MaxRuleBytes)}
	}
	checked, iss := e.env.Compile(r.When)
	if iss.Err() != nil {
		first := iss.Errors()[0]
		return nil, &RuleError{Rule: r.Name, Line: max(first.Location.Line(), 1), Column: first.Location.Column() + 1, Msg: first.Message}
	}
	if !checked.OutputType().IsExactType(types.BoolType) {
		return nil, &RuleError{Rule: r.Name, Msg: "when must be a bool expression, not " + checked.OutputType().String()}
	}
	if err := e.checkCalls(r.Name, checked.NativeRep(), known); err != nil {
		return nil, err
	}
	if err := checkBusy(r, checked.NativeRep()); err != nil {
		return nil, err
	}
	est, err := e.env.EstimateCost(checked, estimator{})
	if err != nil {
		return nil, &RuleError{Rule: r.Name, Msg: "cost: " + err.Error()}
	}
	if est.Max > MaxCost {
		return nil, &RuleError{Rule: r.Name, Msg: fmt.Sprintf("possibly slow: its estimated cost, up to %d, is over %d (scan fewer or shorter strings, test the cheap conditions first)", est.Max, MaxCost)}
	}
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize),
		cel.CustomDecoratorV2(decorateInNetwork), cel.CustomDecoratorV2(decorateInList), cel.CustomDecoratorV2(decorateTimeZone)}
	if est.Max > trackAbove {
		opts = append(opts, cel.CostLimit(RuntimeCostLimit))
	}
	prg, err := e.env.Program(checked, opts...)
	if err != nil {
		return nil, &RuleError{Rule: r.Name, Msg: err.Error()}
	}
	return prg, nil
}

// checkCalls checks the constant arguments of in_list and in_network.
func (e *Engine) checkCalls(rule string, a *ast.AST, known func(string) bool) error {
	at := func(ex ast.Expr, msg string) error {
		loc := a.SourceInfo().GetStartLocation(ex.ID())
		return &RuleError{Rule: rule, Line: max(loc.Line(), 1), Column: loc.Column() + 1, Msg: msg}
	}
	root := ast.NavigateAST(a)
	for _, call := range ast.MatchDescendants(root, ast.FunctionMatcher(fnInList)) {
		if e.lists == nil {
			return at(call, "in_list: this node has no lists")
		}
		arg := call.AsCall().Args()[0]
		name, ok := constString(arg)
		switch {
		case !ok:
			return at(arg, "in_list: the list must be a constant name: in_list(\"vip\", user)")
		case !event.ValidListName(name):
			return at(arg, fmt.Sprintf("in_list: %q is not a list name", name))
		case known != nil && !known(name):
			return at(arg, fmt.Sprintf("in_list: no list %q", name))
		}
	}
	for _, call := range ast.MatchDescendants(root, ast.FunctionMatcher(fnInNetwork)) {
		arg := call.AsCall().Args()[1]
		cidr, ok := constString(arg)
		if !ok {
			return at(arg, "in_network: the network must be a constant CIDR: in_network(request.ip, \"10.0.0.0/8\")")
		}
		if _, err := netip.ParsePrefix(cidr); err != nil {
			return at(arg, fmt.Sprintf("in_network: %q is not a network (CIDR, like \"10.0.0.0/8\" or \"2001:db8::/32\")", cidr))
		}
	}
	zoned := func(e ast.NavigableExpr) bool {
		return e.Kind() == ast.CallKind && tzAccessors[e.AsCall().FunctionName()] && e.AsCall().IsMemberFunction() && len(e.AsCall().Args()) == 1
	}
	for _, call := range ast.MatchDescendants(root, zoned) {
		arg := call.AsCall().Args()[0]
		tz, ok := constString(arg)
		if !ok {
			return at(arg, call.AsCall().FunctionName()+": the time zone must be a constant: now.getHours(\"Europe/Paris\")")
		}
		if _, err := location(tz); err != nil {
			return at(arg, fmt.Sprintf("%s: %q is not a time zone: %v", call.AsCall().FunctionName(), tz, err))
		}
	}
	return nil
}

// checkBusy refuses busy_network() in a rule whose then is not
// challenge: a busy network is asked about only to turn a join's 429 into
// a challenge (door.BusyChallenges), so any other then would never act.
func checkBusy(r event.Rule, a *ast.AST) error {
	if r.Then == "challenge" {
		return nil
	}
	busy := func(e ast.NavigableExpr) bool { return e.Kind() == ast.IdentKind && e.AsIdent() == varBusy }
	for _, ref := range ast.MatchDescendants(ast.NavigateAST(a), busy) {
		loc := a.SourceInfo().GetStartLocation(ref.ID())
		return &RuleError{Rule: r.Name, Line: max(loc.Line(), 1), Column: loc.Column() + 1,
			Msg: fnBusy + "() may only decide a rule whose then is challenge (it turns a join's 429 into the challenge)"}
	}
	return nil
}

// constString is the value of a string literal.
func constString(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// estimator bounds the sizes CEL cannot know (every string and map of a
// request) and prices the rule functions.
type estimator struct{}

// EstimateSize implements checker.CostEstimator.
func (estimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	switch n.Type().Kind() {
	case types.StringKind, types.BytesKind:
		return &checker.SizeEstimate{Min: 0, Max: maxString}
	case types.MapKind, types.ListKind:
		return &checker.SizeEstimate{Min: 0, Max: maxEntries}
	}
	return nil
}

// EstimateCallCost implements checker.CostEstimator: a list lookup or a
// network test costs a few comparisons.
func (estimator) EstimateCallCost(function, _ string, _ *checker.AstNode, _ []checker.AstNode) *checker.CallEstimate {
	switch function {
	case fnInList, fnInNetwork:
		return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: 5}}
	}
	return nil
}
