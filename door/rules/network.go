package rules

import (
	"net/netip"

	"github.com/anteroom/anteroom/door"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// decorateInNetwork replaces every in_network call whose network is a
// constant by a step that holds the parsed network: no CIDR is parsed
// per request, and in_network(request.ip, …) reads the request's address
// as it is, without formatting or parsing it.
func decorateInNetwork(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	call, ok := i.(interpreter.InterpretableCall)
	if !ok || call.OverloadID() != overloadNetwork {
		return i, nil
	}
	args := call.Args()
	c, ok := args[1].(interpreter.InterpretableConst)
	if !ok {
		return i, nil
	}
	s, ok := c.Value().(types.String)
	if !ok {
		return i, nil
	}
	p, err := netip.ParsePrefix(string(s))
	if err != nil {
		return nil, err // Compile refused it already
	}
	return &networkStep{InterpretableCall: call, ip: args[0], network: p.Masked(), requestIP: readsRequestIP(args[0])}, nil
}

// readsRequestIP reports whether i is the variable request.ip itself.
func readsRequestIP(i interpreter.InterpretableV2) bool {
	at, ok := i.(interpreter.InterpretableAttribute)
	if !ok {
		return false
	}
	na, ok := at.Attr().(interpreter.NamespacedAttribute)
	if !ok || len(na.Qualifiers()) != 0 {
		return false
	}
	names := na.CandidateVariableNames()
	return len(names) == 1 && names[0] == varIP
}

// networkStep is in_network with a constant network. It keeps the call's
// identity (function, overload, arguments) for cost tracking.
type networkStep struct {
	interpreter.InterpretableCall
	ip        interpreter.InterpretableV2
	network   netip.Prefix
	requestIP bool
}

// Eval implements interpreter.Interpretable.
func (n *networkStep) Eval(a interpreter.Activation) ref.Val {
	return n.Exec(interpreter.AsFrame(a))
}

// Exec implements interpreter.InterpretableV2.
func (n *networkStep) Exec(f *interpreter.ExecutionFrame) ref.Val {
	if n.requestIP {
		if a, ok := f.Activation.(*activation); ok {
			addr := a.r.Addr
			return types.Bool(addr.IsValid() && n.network.Contains(addr.Unmap()))
		}
	}
	v := n.ip.Exec(f)
	s, ok := v.(types.String)
	if !ok {
		if types.IsUnknownOrError(v) {
			return v
		}
		return types.False
	}
	return types.Bool(contains(n.network, string(s)))
}

// decorateInList replaces in_list(list, request.ip) by a step that looks
// the request's address up as it is, without formatting or parsing it.
func decorateInList(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	call, ok := i.(interpreter.InterpretableCall)
	if !ok || call.OverloadID() != overloadInList {
		return i, nil
	}
	args := call.Args()
	c, ok := args[0].(interpreter.InterpretableConst)
	if !ok || !readsRequestIP(args[1]) {
		return i, nil
	}
	list, ok := c.Value().(types.String)
	if !ok {
		return i, nil
	}
	return &listAddrStep{InterpretableCall: call, list: string(list)}, nil
}

// listAddrStep is in_list(list, request.ip).
type listAddrStep struct {
	interpreter.InterpretableCall
	list string
}

// Eval implements interpreter.Interpretable.
func (l *listAddrStep) Eval(a interpreter.Activation) ref.Val { return l.Exec(interpreter.AsFrame(a)) }

// Exec implements interpreter.InterpretableV2.
func (l *listAddrStep) Exec(f *interpreter.ExecutionFrame) ref.Val {
	a, ok := f.Activation.(*activation)
	if !ok {
		return l.InterpretableCall.Exec(f)
	}
	if a.lists == nil || !a.r.Addr.IsValid() {
		return types.False
	}
	switch a.lists.Addr(l.list, a.r.Addr.Unmap()) {
	case door.Present:
		return types.True
	case door.Unknown:
		return unheld
	}
	return types.False
}
