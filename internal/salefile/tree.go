package salefile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// object is a JSON object that keeps its members in the order of the Go
// struct's fields, so an export reads like the configuration's docs.
type object []member

// setObject is an object behind a pointer: set, even with nothing in
// it (closed: {} closes the room without a message), which prune keeps
// apart from none.
type setObject object

type member struct {
	key   string
	value any
}

// A tree is a configuration's JSON form: nil, json.RawMessage (a
// scalar), []any or object.

// treeOf is v's JSON form with every field of every struct, by its json
// name, whatever its omitempty: a nil pointer or map is null, a nil
// slice [].
// Fields json-named "secret" or "secret_set" are never in it: secrets
// are handled apart (secrets.go).
func treeOf(v reflect.Value) (any, error) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		return json.RawMessage(fmt.Sprintf("%q", v.Interface().(time.Time).UTC().Format(time.RFC3339Nano))), nil
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, nil
		}
		t, err := treeOf(v.Elem())
		if o, ok := t.(object); ok {
			return setObject(o), err
		}
		return t, err
	}
	if v.Type().Implements(reflect.TypeFor[json.Marshaler]()) {
		raw, err := json.Marshal(v.Interface())
		if err != nil {
			return nil, err
		}
		if string(raw) == "null" {
			return nil, nil
		}
		return json.RawMessage(raw), nil
	}
	switch v.Kind() {
	case reflect.Struct:
		var o object
		for i := range v.NumField() {
			f := v.Type().Field(i)
			name := jsonName(f)
			if name == "" || name == "secret" || name == "secret_set" {
				continue
			}
			t, err := treeOf(v.Field(i))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			o = append(o, member{name, t})
		}
		return o, nil
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return []any{}, nil // none, as the admin API's contract writes it
		}
		out := make([]any, v.Len())
		for i := range v.Len() {
			t, err := treeOf(v.Index(i))
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = t
		}
		return out, nil
	case reflect.Map:
		if v.IsNil() {
			return nil, nil
		}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		var o object
		for _, k := range keys {
			t, err := treeOf(v.MapIndex(k))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			o = append(o, member{k.String(), t})
		}
		return o, nil
	}
	raw, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, err
	}
	return json.RawMessage(raw), nil
}

// jsonName is a struct field's JSON name, "" for one JSON leaves out.
func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name
}

// prune leaves out what reads the same as absent: nulls, empty strings,
// lists and maps, and objects left empty (one behind a pointer,
// setObject, becomes the scalar {}). keepEmpty keeps t itself when
// it is an object left empty; otherwise prune returns nil when t goes.
func prune(t any, keepEmpty bool) any {
	switch t := t.(type) {
	case nil:
		return nil
	case []any:
		if len(t) == 0 {
			return nil
		}
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = e // an element stays in place
			if o, ok := e.(object); ok {
				out[i] = prune(o, true)
			}
		}
		return out
	case setObject:
		if o := prune(object(t), true).(object); len(o) > 0 {
			return o
		}
		return json.RawMessage("{}")
	case object:
		var out object
		for _, m := range t {
			if v := prune(m.value, false); v != nil {
				out = append(out, member{m.key, v})
			}
		}
		if len(out) == 0 && !keepEmpty {
			return nil
		}
		if out == nil {
			out = object{}
		}
		return out
	}
	if raw, ok := t.(json.RawMessage); ok && string(raw) == `""` {
		return nil // a string left out is empty
	}
	return t
}

// without is o less the members named keys.
func without(o object, keys ...string) object {
	return slices.DeleteFunc(slices.Clone(o), func(m member) bool { return slices.Contains(keys, m.key) })
}

// get is o's member key, or nil.
func (o object) get(key string) any {
	for _, m := range o {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

// appendJSON writes t as compact JSON.
func appendJSON(b *bytes.Buffer, t any) {
	switch t := t.(type) {
	case nil:
		b.WriteString("null")
	case json.RawMessage:
		b.Write(t)
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			appendJSON(b, e)
		}
		b.WriteByte(']')
	case setObject:
		appendJSON(b, object(t))
	case object:
		b.WriteByte('{')
		for i, m := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(m.key)
			b.Write(k)
			b.WriteByte(':')
			appendJSON(b, m.value)
		}
		b.WriteByte('}')
	}
}

// jsonOf is t as compact JSON.
func jsonOf(t any) []byte {
	var b bytes.Buffer
	appendJSON(&b, t)
	return b.Bytes()
}

// yamlOf is t as a YAML node, block style.
func yamlOf(t any) (*yaml.Node, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(jsonOf(t), &n); err != nil {
		return nil, err
	}
	plain(&n)
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return n.Content[0], nil
	}
	return &n, nil
}

// plain makes a node parsed from JSON read as block YAML: no flow
// style, no quotes a plain scalar does not need (the encoder quotes a
// string that would read as another type).
func plain(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plain(c)
	}
}
