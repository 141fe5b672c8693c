package rules

import (
	"errors"
	"net/netip"

	"github.com/anteroom/anteroom/door"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
)

// Function and overload names.
const (
	// fnInList is the function in_list(…) expands to: CEL's standard
	// library dispatches `x in list` by the overload id "in_list", which
	// a function of that name would shadow.
	fnInList        = "@in_list"
	macroInList     = "in_list"
	fnInNetwork     = "in_network"
	fnCrawler       = "verified_crawler"
	fnBusy          = door.BusyFunction
	overloadInList  = "in_list_string_string"
	overloadNetwork = "in_network_string_string"
)

// newEnv is the CEL environment of rules over lists: the variables, the
// functions and the standard library with the strings extension.
func newEnv(lists door.Lists) (*cel.Env, error) {
	opts := []cel.EnvOption{
		ext.Strings(),
		cel.Variable(varCrawler, cel.BoolType),
		cel.Variable(varBusy, cel.BoolType),
		cel.Macros(cel.GlobalMacro(fnCrawler, 0, func(eh cel.MacroExprFactory, _ ast.Expr, _ []ast.Expr) (ast.Expr, *cel.Error) {
			return eh.NewIdent(varCrawler), nil
		}), cel.GlobalMacro(fnBusy, 0, func(eh cel.MacroExprFactory, _ ast.Expr, _ []ast.Expr) (ast.Expr, *cel.Error) {
			return eh.NewIdent(varBusy), nil
		}), cel.GlobalMacro(macroInList, 2, func(eh cel.MacroExprFactory, _ ast.Expr, args []ast.Expr) (ast.Expr, *cel.Error) {
			return eh.NewCall(fnInList, args...), nil
		})),
		cel.Function(fnInList, cel.Overload(overloadInList, []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType,
			cel.BinaryBinding(inList(lists)))),
		cel.Function(fnInNetwork, cel.Overload(overloadNetwork, []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType,
			cel.BinaryBinding(inNetwork))),
	}
	for _, v := range variables {
		opts = append(opts, cel.Variable(v.Name, v.typ))
	}
	return cel.NewEnv(opts...)
}

// inList is in_list over lists: an address is looked up in the list's
// networks (exact), anything else as a user id (a filter's maybe counts);
// a list the node does not hold is unheld.
// A nil lists never gets here: Compile refuses in_list without it.
func inList(lists door.Lists) func(list, value ref.Val) ref.Val {
	return func(list, value ref.Val) ref.Val {
		l, ok1 := list.(types.String)
		v, ok2 := value.(types.String)
		if !ok1 || !ok2 || lists == nil {
			return types.False
		}
		if addressLike(string(v)) {
			if addr, err := netip.ParseAddr(string(v)); err == nil {
				switch lists.Addr(string(l), addr.Unmap()) {
				case door.Present:
					return types.True
				case door.Unknown:
					return unheld
				}
			}
		}
		switch lists.User(string(l), string(v)) {
		case door.Absent:
			return types.False
		case door.Unknown:
			return unheld
		}
		return types.True
	}
}

// errUnheld is in_list's answer for a list the node does not hold (yet:
// door.Unknown): neither true nor false. CEL carries it only where the
// outcome depends on it (`x || true` is still true); Engine.eval then
// decides the rule toward refusing.
var errUnheld = errors.New("rules: in_list: the node does not hold the list yet")

// unheld is errUnheld as a CEL value.
var unheld = types.WrapErr(errUnheld)

// inNetwork is in_network with a network that is not a constant: Compile
// refuses those, and the decorator replaces every call whose network is
// one, so this runs only where a rule's network was folded differently.
func inNetwork(ip, network ref.Val) ref.Val {
	i, ok1 := ip.(types.String)
	n, ok2 := network.(types.String)
	if !ok1 || !ok2 {
		return types.False
	}
	p, err := netip.ParsePrefix(string(n))
	if err != nil {
		return types.NewErr("in_network: %q is not a network", string(n))
	}
	return types.Bool(contains(p.Masked(), string(i)))
}

// contains reports whether the address ip (IPv4-mapped IPv6 as IPv4) is
// in p.
func contains(p netip.Prefix, ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && p.Contains(a.Unmap())
}

// addressLike reports whether s may be an IP address (hex digits, '.',
// ':' and a zone): a user id is not parsed (a failed parse allocates).
func addressLike(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F', c == '.', c == ':':
		case c == '%':
			return true
		default:
			return false
		}
	}
	return true
}
