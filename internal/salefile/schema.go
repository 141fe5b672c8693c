package salefile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/anteroom/anteroom/event"
)

// SchemaID is the schema's $id: where docs/sales.schema.json is served
// from the repository, for editors (# yaml-language-server: $schema=…).
const SchemaID = "https://github.com/anteroom/anteroom/raw/main/docs/sales.schema.json"

// enums are the fields whose values are a closed set, by schema path
// ("[]" for a list's items).
var enums = map[string][]string{
	"mode":                    {string(event.FCFS), string(event.Lottery), string(event.SafetyNet)},
	"door.rules[].then":       event.Thens,
	"webhooks[].events[]":     event.LifecycleTypes,
	"limits.captcha.provider": {"", event.CaptchaTurnstile, event.CaptchaHCaptcha},
	"signals.device.source":   {"jwt_claim", "signed_header", "proxy_header"},
	"signals.payment.source":  {"jwt_claim", "signed_header", "proxy_header"},
	"signals.phone.source":    {"jwt_claim", "signed_header", "proxy_header"},
	"signals.address.source":  {"jwt_claim", "signed_header", "proxy_header"},
}

// Schema is the JSON Schema (draft 2020-12) of a sales file, generated
// from event.Config and event.Page by reflection, as Decode reads them:
// every field by its JSON name, no other (additionalProperties false),
// the node's fields (NodeFields) and secret_set left out, secrets only
// as ${NAME} references. docs/sales.schema.json is its output
// (`anteroom sales-schema -w`), checked by a test.
func Schema() ([]byte, error) {
	used := map[string]bool{}
	sale, err := schemaOf(reflect.TypeFor[event.Config](), "", used)
	if err != nil {
		return nil, err
	}
	props := without(sale.get("properties").(object), NodeFields...)
	page, err := schemaOf(reflect.TypeFor[event.Page](), "page", used)
	if err != nil {
		return nil, err
	}
	for p := range enums {
		if !used[p] {
			return nil, fmt.Errorf("salefile: the enumeration of %s names no field", p)
		}
	}
	props = append(props, member{"page", append(object{{"description", str("the published waiting-room page; left out, the built-in page")}}, page...)})
	sale = object{
		{"type", str("object")},
		{"description", str("one sale: every field of its configuration (docs/configure.md) and its page; a field left out takes its default")},
		{"required", []any{str("id"), str("starts_at")}},
		{"properties", props},
		{"additionalProperties", json.RawMessage("false")},
	}
	root := object{
		{"$schema", str("https://json-schema.org/draft/2020-12/schema")},
		{"$id", str(SchemaID)},
		{"title", str("anteroom sales file")},
		{"description", str("sales applied with `anteroom apply -f FILE` and exported with `anteroom get sale ID -o yaml` (docs/sales-as-code.md)")},
		{"type", str("object")},
		{"required", []any{str("sales")}},
		{"properties", object{{"sales", object{{"type", str("array")}, {"items", sale}}}}},
		{"additionalProperties", json.RawMessage("false")},
	}
	var b bytes.Buffer
	if err := json.Indent(&b, jsonOf(root), "", "  "); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

func str(s string) json.RawMessage {
	raw, _ := json.Marshal(s)
	return raw
}

// schemaOf is the schema of values of t at path.
func schemaOf(t reflect.Type, path string, used map[string]bool) (object, error) {
	if vals, ok := enums[path]; ok {
		used[path] = true
		var list []any
		for _, v := range vals {
			list = append(list, str(v))
		}
		return object{{"type", str("string")}, {"enum", list}}, nil
	}
	switch t {
	case reflect.TypeFor[time.Time]():
		return object{{"type", str("string")}, {"format", str("date-time")}}, nil
	case reflect.TypeFor[event.Switch]():
		return object{{"type", json.RawMessage(`["boolean","null"]`)}, {"description", str("true, false, or null (or left out) for the default")}}, nil
	}
	if t.Kind() != reflect.Pointer && t.Implements(reflect.TypeFor[json.Marshaler]()) {
		return nil, fmt.Errorf("salefile: %s (%s) marshals itself: give the schema its form", path, t)
	}
	switch t.Kind() {
	case reflect.Pointer:
		s, err := schemaOf(t.Elem(), path, used)
		if err != nil {
			return nil, err
		}
		return object{{"anyOf", []any{s, object{{"type", str("null")}}}}}, nil
	case reflect.String:
		return object{{"type", str("string")}}, nil
	case reflect.Bool:
		return object{{"type", str("boolean")}}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return object{{"type", str("integer")}}, nil
	case reflect.Float32, reflect.Float64:
		return object{{"type", str("number")}}, nil
	case reflect.Slice:
		items, err := schemaOf(t.Elem(), path+"[]", used)
		if err != nil {
			return nil, err
		}
		return object{{"type", json.RawMessage(`["array","null"]`)}, {"items", items}}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("salefile: %s: a map's keys must be strings", path)
		}
		vals, err := schemaOf(t.Elem(), path+"{}", used)
		if err != nil {
			return nil, err
		}
		return object{{"type", json.RawMessage(`["object","null"]`)}, {"additionalProperties", vals}}, nil
	case reflect.Struct:
		var props object
		for i := range t.NumField() {
			f := t.Field(i)
			name := jsonName(f)
			if name == "" || name == "secret_set" {
				continue
			}
			sub := name
			if path != "" {
				sub = path + "." + name
			}
			if name == "secret" {
				props = append(props, member{name, object{{"type", str("string")}, {"pattern", str(SecretRefPattern)},
					{"description", str("a reference to an environment variable of `anteroom apply`, ${NAME}; never the secret itself. Left out, the stored secret is kept")}}})
				continue
			}
			s, err := schemaOf(f.Type, sub, used)
			if err != nil {
				return nil, err
			}
			props = append(props, member{name, s})
		}
		return object{{"type", str("object")}, {"properties", props}, {"additionalProperties", json.RawMessage("false")}}, nil
	}
	return nil, fmt.Errorf("salefile: %s: no schema for %s", path, t)
}
