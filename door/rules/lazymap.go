package rules

import (
	"errors"
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// mapKind is which of the request's maps a lazyMap reads.
type mapKind uint8

const (
	params mapKind = iota
	headers
	cookies
	claimsMap
	signalsMap
)

// lazyMap is request.params, request.headers, request.cookies, claims or
// signals:
// a CEL map that reads the request on each lookup and builds nothing
// until a rule lists it. A missing key reads as the zero value ("" or
// []), so `request.headers["x-debug"] == "1"` needs no presence test;
// `"x" in m` tests presence. Headers and cookies cannot be listed: the
// request reads them only by name.
type lazyMap struct {
	a    *activation
	kind mapKind
}

var (
	_ traits.Mapper = (*lazyMap)(nil)

	errUnlisted = errors.New("request headers, cookies and signals can only be read by name")
	emptyList   = types.NewStringList(types.DefaultTypeAdapter, nil)
)

// lookup is key's value and whether the request has it.
func (m *lazyMap) lookup(key string) (ref.Val, bool) {
	switch m.kind {
	case params:
		v, ok := m.a.param(key)
		return types.String(v), ok
	case headers:
		v := m.a.header(key)
		return types.String(v), v != ""
	case cookies:
		v := m.a.cookie(key)
		return types.String(v), v != ""
	case signalsMap:
		ok := m.a.signal(key)
		return types.Bool(ok), ok
	default:
		l, ok := m.a.claim(key)
		if !ok {
			return emptyList, false
		}
		// A claim comes from a token the request carries in a header or
		// a cookie: its strings are bounded by the header's size.
		return types.NewStringList(types.DefaultTypeAdapter, l[:min(len(l), maxEntries)]), true
	}
}

// Find implements traits.Mapper: every string key is found, a missing
// one as the zero value.
func (m *lazyMap) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return types.ValOrErr(key, "no such key: %v", key), false
	}
	v, _ := m.lookup(string(k))
	return v, true
}

// Get implements traits.Indexer.
func (m *lazyMap) Get(key ref.Val) ref.Val {
	v, _ := m.Find(key)
	return v
}

// Contains implements traits.Container: whether the request has key.
func (m *lazyMap) Contains(key ref.Val) ref.Val {
	k, ok := key.(types.String)
	if !ok {
		return types.False
	}
	_, found := m.lookup(string(k))
	return types.Bool(found)
}

// native is the map as Go values, for listing; nil for headers, cookies
// and signals.
func (m *lazyMap) native() map[string]any {
	switch m.kind {
	case params:
		out := map[string]any{}
		for _, p := range m.a.queryParams() {
			out[p.key] = p.value
		}
		return out
	case claimsMap:
		out := make(map[string]any, min(len(m.a.r.Claims), maxEntries))
		for k, v := range m.a.r.Claims {
			if len(out) == maxEntries {
				break
			}
			out[k] = v[:min(len(v), maxEntries)]
		}
		return out
	}
	return nil
}

// listed is the map as a CEL map, or an error for headers and cookies.
func (m *lazyMap) listed() ref.Val {
	n := m.native()
	if n == nil {
		return types.WrapErr(errUnlisted)
	}
	return types.DefaultTypeAdapter.NativeToValue(n)
}

// Iterator implements traits.Iterable.
func (m *lazyMap) Iterator() traits.Iterator {
	if l, ok := m.listed().(traits.Mapper); ok {
		return l.Iterator()
	}
	return &errIterator{}
}

// Size implements traits.Sizer.
func (m *lazyMap) Size() ref.Val {
	if l, ok := m.listed().(traits.Mapper); ok {
		return l.Size()
	}
	return types.WrapErr(errUnlisted)
}

// ConvertToNative implements ref.Val.
func (m *lazyMap) ConvertToNative(t reflect.Type) (any, error) {
	if l, ok := m.listed().(traits.Mapper); ok {
		return l.ConvertToNative(t)
	}
	return nil, errUnlisted
}

// ConvertToType implements ref.Val.
func (m *lazyMap) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return m
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from map to '%s'", t)
}

// Equal implements ref.Val.
func (m *lazyMap) Equal(other ref.Val) ref.Val {
	if o, ok := other.(*lazyMap); ok && o == m {
		return types.True
	}
	l := m.listed()
	if types.IsError(l) {
		return l
	}
	return l.Equal(other)
}

// Type implements ref.Val.
func (m *lazyMap) Type() ref.Type { return types.MapType }

// Value implements ref.Val.
func (m *lazyMap) Value() any { return m.native() }

// errIterator is the iterator of a map that cannot be listed: one key,
// an error, which fails the comprehension over it.
type errIterator struct{ done bool }

func (it *errIterator) HasNext() ref.Val { return types.Bool(!it.done) }
func (it *errIterator) Next() ref.Val {
	it.done = true
	return types.WrapErr(errUnlisted)
}
func (*errIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, errUnlisted
}
func (*errIterator) ConvertToType(ref.Type) ref.Val { return types.WrapErr(errUnlisted) }
func (*errIterator) Equal(ref.Val) ref.Val          { return types.WrapErr(errUnlisted) }
func (*errIterator) Type() ref.Type                 { return types.IteratorType }
func (*errIterator) Value() any                     { return nil }
