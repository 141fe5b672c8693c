package conform

import (
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// Direction is which way a body goes: a request's body is read by the
// node, an answer's written by it.
type Direction int

// The directions of a body.
const (
	// Request: the node decodes the body strictly (unknown fields are
	// 400), so every object of the schema must say additionalProperties:
	// false. Fields may be left out.
	Request Direction = iota
	// Answer: the node writes the body, so every field without omitempty
	// (or omitzero) is always there and must be required.
	Answer
)

// Body is the schema of an operation's body: its request body (status 0)
// or its answer with status, as application/json.
func (c *Checker) Body(operationID string, status int) (*openapi3.SchemaRef, error) {
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID != operationID {
				continue
			}
			var content openapi3.Content
			if status == 0 {
				if op.RequestBody == nil || op.RequestBody.Value == nil {
					return nil, fmt.Errorf("%s %s (%s) has no request body", method, path, operationID)
				}
				content = op.RequestBody.Value.Content
			} else {
				r := op.Responses.Status(status)
				if r == nil || r.Value == nil {
					return nil, fmt.Errorf("%s %s (%s) has no answer %d", method, path, operationID, status)
				}
				content = r.Value.Content
			}
			mt := content.Get("application/json")
			if mt == nil || mt.Schema == nil {
				return nil, fmt.Errorf("%s %s (%s) %d has no application/json schema", method, path, operationID, status)
			}
			return mt.Schema, nil
		}
	}
	return nil, fmt.Errorf("no operation %q in the contract", operationID)
}

// Shape compares a Go type's JSON form with a schema, both ways: every
// field of t (as encoding/json writes it) is a property of the schema and
// every property a field, at every depth (struct fields, slice items, map
// values, pointers); their JSON types agree; and the rules of dir hold
// (see Direction). Objects whose schema is a component named in partial
// are exempt from Answer's required rule: a PUT body that merges into
// the stored value shares them, so they list nothing as required. It
// returns one line per mismatch, nil when t and the schema agree.
func Shape(s *openapi3.SchemaRef, t reflect.Type, dir Direction, partial ...string) []string {
	w := &shaper{dir: dir, partial: partial, seen: map[string]bool{}}
	w.shape("$", s, t, true)
	return w.out
}

type shaper struct {
	dir     Direction
	partial []string
	seen    map[string]bool // schema ref + Go type already compared
	out     []string
}

func (w *shaper) errorf(at, format string, args ...any) {
	w.out = append(w.out, at+": "+fmt.Sprintf(format, args...))
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textType      = reflect.TypeFor[encoding.TextMarshaler]()
)

// shape compares s with t at path at; always says whether the value is
// always written (a field without omitempty), for Answer's null rule.
func (w *shaper) shape(at string, s *openapi3.SchemaRef, t reflect.Type, always bool) {
	if s == nil || s.Value == nil {
		w.errorf(at, "no schema for Go %s", t)
		return
	}
	key := s.Ref + "|" + t.String()
	if s.Ref != "" {
		if w.seen[key] {
			return
		}
		w.seen[key] = true
	}
	if t.Kind() == reflect.Pointer {
		if w.dir == Answer && always && !permits(s.Value, "null") {
			w.errorf(at, "Go %s is written as null when nil: the schema must allow null", t)
		}
		t = t.Elem()
	}
	// A nullable alternative (oneOf [X, null]) is compared as X.
	if alt := nonNull(s.Value); alt != nil {
		w.shape(at, alt, t, false)
		return
	}
	switch {
	case t == rawType || t.Kind() == reflect.Interface:
		return // any JSON
	case t == timeType:
		w.wantType(at, s.Value, t, "string")
		return
	case t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType),
		t.Implements(textType) || reflect.PointerTo(t).Implements(textType):
		return // its own JSON: the schema says what it is
	}
	switch t.Kind() {
	case reflect.String:
		w.wantType(at, s.Value, t, "string")
	case reflect.Bool:
		w.wantType(at, s.Value, t, "boolean")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		w.wantType(at, s.Value, t, "integer")
	case reflect.Float32, reflect.Float64:
		w.wantType(at, s.Value, t, "number")
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			w.wantType(at, s.Value, t, "string")
			return
		}
		if w.wantType(at, s.Value, t, "array") {
			w.shape(at+"[]", s.Value.Items, t.Elem(), true)
		}
	case reflect.Map:
		if e := t.Elem(); e == rawType || e.Kind() == reflect.Interface {
			w.wantType(at, s.Value, t, "object")
			return
		}
		if w.wantType(at, s.Value, t, "object") {
			w.shape(at+"{}", s.Value.AdditionalProperties.Schema, t.Elem(), true)
		}
	case reflect.Struct:
		w.object(at, s, t)
	default:
		w.errorf(at, "Go %s has no JSON form this check knows", t)
	}
}

// wantType checks that s allows JSON type typ (or is an enum or const,
// whose values say it); it reports whether it does.
func (w *shaper) wantType(at string, s *openapi3.Schema, t reflect.Type, typ string) bool {
	if s.Type == nil || s.Type.IsEmpty() {
		if len(s.Enum) > 0 || s.Const != nil {
			return true
		}
		w.errorf(at, "the schema has no type; Go %s is a JSON %s", t, typ)
		return false
	}
	if !s.Type.Includes(typ) && !(typ == "number" && s.Type.Includes("integer")) {
		w.errorf(at, "the schema is %v; Go %s is a JSON %s", s.Type.Slice(), t, typ)
		return false
	}
	return true
}

// object compares a struct's JSON fields with an object schema (merged
// over its allOf).
func (w *shaper) object(at string, ref *openapi3.SchemaRef, t reflect.Type) {
	props, required, closed := merged(ref.Value)
	if ref.Value.Type != nil && !ref.Value.Type.IsEmpty() && !ref.Value.Type.Includes("object") {
		w.errorf(at, "the schema is %v; Go %s is a JSON object", ref.Value.Type.Slice(), t)
		return
	}
	fields := jsonFields(t)
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		f := fields[name]
		p, ok := props[name]
		if !ok {
			w.errorf(at, "Go %s has field %q (%s), missing from the schema", t, name, f.typ)
			continue
		}
		w.shape(at+"."+name, p, f.typ, !f.omit)
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if _, ok := fields[name]; !ok {
			w.errorf(at, "the schema has property %q that Go %s does not have", name, t)
		}
	}
	switch w.dir {
	case Request:
		if !closed {
			w.errorf(at, "Go %s is decoded strictly: the schema must say additionalProperties: false", t)
		}
	case Answer:
		if slices.Contains(w.partial, componentName(ref.Ref)) {
			return
		}
		for _, name := range slices.Sorted(maps.Keys(fields)) {
			if _, ok := props[name]; ok && !fields[name].omit && !required[name] {
				w.errorf(at, "Go %s always writes %q: the schema must require it", t, name)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(required)) {
			if f, ok := fields[name]; ok && f.omit {
				w.errorf(at, "the schema requires %q, which Go %s leaves out when empty", name, t)
			}
		}
	}
}

// merged is s's properties, required names and whether it is closed
// (additionalProperties: false), over s and its allOf.
func merged(s *openapi3.Schema) (props map[string]*openapi3.SchemaRef, required map[string]bool, closed bool) {
	props, required = map[string]*openapi3.SchemaRef{}, map[string]bool{}
	var visit func(s *openapi3.Schema)
	visit = func(s *openapi3.Schema) {
		maps.Copy(props, s.Properties)
		for _, r := range s.Required {
			required[r] = true
		}
		if h := s.AdditionalProperties.Has; h != nil && !*h {
			closed = true
		}
		for _, b := range s.AllOf {
			if b.Value != nil {
				visit(b.Value)
			}
		}
	}
	visit(s)
	return props, required, closed
}

// nonNull is X of a oneOf or anyOf [X, {type: null}], nil otherwise.
func nonNull(s *openapi3.Schema) *openapi3.SchemaRef {
	for _, list := range []openapi3.SchemaRefs{s.OneOf, s.AnyOf} {
		if len(list) != 2 {
			continue
		}
		for i, b := range list {
			if b.Value != nil && b.Value.Type != nil && b.Value.Type.Is("null") {
				return list[1-i]
			}
		}
	}
	return nil
}

// permits reports whether s lets a value of JSON type typ through.
func permits(s *openapi3.Schema, typ string) bool {
	if s.Type != nil && s.Type.Includes(typ) {
		return true
	}
	for _, list := range []openapi3.SchemaRefs{s.OneOf, s.AnyOf} {
		for _, b := range list {
			if b.Value != nil && permits(b.Value, typ) {
				return true
			}
		}
	}
	return false
}

func componentName(ref string) string {
	name, _ := strings.CutPrefix(ref, "#/components/schemas/")
	return name
}

// field is one JSON field of a struct.
type field struct {
	typ  reflect.Type
	omit bool // omitempty or omitzero: may be left out
}

// jsonFields are the fields encoding/json writes for struct t: exported,
// named by their tag, not "-", embedded structs' fields promoted unless a
// field of t has their name.
func jsonFields(t reflect.Type) map[string]field {
	out, promoted := map[string]field{}, map[string]field{}
	defer func() {
		for name, f := range promoted {
			if _, ok := out[name]; !ok {
				out[name] = f
			}
		}
	}()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				maps.Copy(promoted, jsonFields(et))
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		omit := false
		for o := range strings.SplitSeq(opts, ",") {
			omit = omit || o == "omitempty" || o == "omitzero"
		}
		out[name] = field{typ: f.Type, omit: omit}
	}
	return out
}

// Shaped names a body of the contract and the Go value the handler
// decodes it into or answers it from.
type Shaped struct {
	// Op is the operation's operationId.
	Op string
	// Status is the answer's status; 0 is the request body (Request).
	Status int
	// Value is a value of the Go type.
	Value any
}

// Shapes checks each body with Shape (Request for status 0, Answer
// otherwise) and returns every mismatch, prefixed by its body.
func (c *Checker) Shapes(bodies []Shaped, partial ...string) []string {
	var out []string
	for _, b := range bodies {
		s, err := c.Body(b.Op, b.Status)
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		dir := Answer
		if b.Status == 0 {
			dir = Request
		}
		for _, e := range Shape(s, reflect.TypeOf(b.Value), dir, partial...) {
			out = append(out, fmt.Sprintf("%s %d: %s", b.Op, b.Status, e))
		}
	}
	return out
}

// Component is the contract's schema components/schemas/name.
func (c *Checker) Component(name string) (*openapi3.SchemaRef, error) {
	s := c.doc.Components.Schemas[name]
	if s == nil {
		return nil, fmt.Errorf("no schema %q in the contract's components", name)
	}
	return s, nil
}
