// Package salefile is the sales file of `anteroom apply` and `anteroom
// get sale`: a YAML (or JSON) document holding whole sales — every field
// of a sale's configuration (event.Config, by its JSON names) and its
// published waiting-room page — so sales can live in git and be applied
// from CI.
//
// It owns the file's format: Decode reads it strictly (an unknown field,
// a field the node sets, a literal secret are errors naming the sale and
// the line), Encode writes one sale the way Decode reads it, Diff says
// what applying a sale would change (field paths, old → new, secrets
// never shown), Body is the configuration as the admin API's PUT takes
// it (every field written, so the PUT replaces rather than merges), and
// Schema is the file's JSON Schema, generated from the same types.
//
// The model: a sale in the file is the whole truth about it. A field
// left out takes its default (event.Config.Defaults), not the live
// value; the node's own fields (NodeFields) are never in the file.
// Secrets are never in the file either, only references to the
// environment (secrets.go).
package salefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/anteroom/anteroom/event"
	"go.yaml.in/yaml/v3"
)

// Sale is one sale of a file: its configuration and its page.
type Sale struct {
	// Config is the sale's configuration, defaulted; its secrets are
	// the values the references named (Refs).
	Config event.Config
	// Page is the published waiting-room page; the zero Page is the
	// built-in one.
	Page event.Page
	// Refs are the environment references the file gave for secrets, by
	// path (SecretPaths' forms: "webhooks[url].secret", "shop.secret",
	// "limits.captcha.secret"), as written ("${NAME}").
	Refs map[string]string
	// Line is the sale's line in the file (0 when not read from one).
	Line int
}

// NodeFields are the configuration's fields the node sets, never a
// file: the event's version, its seed and commitment, whether lanes
// draw with their own seeds, the published page's version (the file's
// page is the page), and a fail-open deadline (set with its own
// confirmed route, never by a save; a file leaves it as it is).
var NodeFields = []string{"version", "seed", "seed_commitment", "lane_seeds", "page_version", "fail_open_until"}

// ErrFormat wraps every error of a file's content.
var ErrFormat = errors.New("sales file")

// Decode reads a sales file (YAML, or JSON, which is YAML). Every sale
// is checked as the node would check it (event.Config.Validate, the
// page's shape) with its secrets resolved by getenv; the first problem
// is an error wrapping ErrFormat that names the sale and its line.
// Ids must be unique.
func Decode(data []byte, getenv func(string) string) ([]Sale, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: not YAML: %v", ErrFormat, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrFormat)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: line %d: the file is a mapping with one key, sales (a list)", ErrFormat, root.Line)
	}
	var sales *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i].Value; k != "sales" {
			return nil, fmt.Errorf("%w: line %d: unknown key %q (the file has one key, sales)", ErrFormat, root.Content[i].Line, k)
		}
		sales = root.Content[i+1]
	}
	if sales == nil || sales.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%w: line %d: sales must be a list", ErrFormat, root.Line)
	}
	var out []Sale
	seen := map[string]int{}
	for i, n := range sales.Content {
		s, err := decodeSale(n, getenv)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: sales[%d]%s: %v", ErrFormat, n.Line, i, named(n), err)
		}
		if at, dup := seen[s.Config.ID]; dup {
			return nil, fmt.Errorf("%w: line %d: sales[%d]: id %q is the id of the sale at line %d too", ErrFormat, n.Line, i, s.Config.ID, at)
		}
		seen[s.Config.ID] = n.Line
		out = append(out, s)
	}
	return out, nil
}

// named is " (id x)" for a sale node with an id.
func named(n *yaml.Node) string {
	for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "id" {
			return fmt.Sprintf(" (id %s)", n.Content[i+1].Value)
		}
	}
	return ""
}

// decodeSale reads one sale: the node as JSON, then strictly into the
// configuration and the page.
func decodeSale(n *yaml.Node, getenv func(string) string) (Sale, error) {
	if n.Kind != yaml.MappingNode {
		return Sale{}, errors.New("a sale is a mapping of its fields")
	}
	var generic any
	if err := n.Decode(&generic); err != nil {
		return Sale{}, err
	}
	raw, err := json.Marshal(jsonable(generic))
	if err != nil {
		return Sale{}, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return Sale{}, err
	}
	for _, f := range NodeFields {
		if _, ok := fields[f]; ok {
			return Sale{}, fmt.Errorf("%s is set by the node, never by a file", f)
		}
	}
	s := Sale{Line: n.Line}
	if p, ok := fields["page"]; ok {
		delete(fields, "page")
		if err := strict(p, &s.Page); err != nil {
			return Sale{}, fmt.Errorf("page: %v", err)
		}
		if err := s.Page.Validate(); err != nil {
			return Sale{}, err
		}
	}
	rest, _ := json.Marshal(fields)
	if err := strict(rest, &s.Config); err != nil {
		return Sale{}, err
	}
	if s.Config.ID == "" {
		return Sale{}, errors.New("id is required")
	}
	if err := resolveSecrets(&s, getenv); err != nil {
		return Sale{}, err
	}
	s.Config.Defaults()
	if err := s.validate(); err != nil {
		return Sale{}, err
	}
	return s, nil
}

// strict decodes raw into v, refusing unknown fields.
func strict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// jsonable turns YAML's decoded values into ones encoding/json takes
// (YAML allows non-string keys).
func jsonable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = jsonable(e)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range v {
			v[i] = jsonable(e)
		}
		return v
	}
	return v
}

// FromLive is a sale as the admin API answers it: its configuration
// (secrets redacted, SecretSet telling which are stored) and its
// published page (nil: the built-in one).
func FromLive(cfg event.Config, published *event.Page) Sale {
	s := Sale{Config: cfg}
	if published != nil {
		s.Page = *published
	}
	return s
}

// tree is the sale's file form, pruned: its configuration without the
// node's fields, then its page; with refs, the file's references to its
// secrets.
func (s *Sale) tree(refs bool) (object, error) {
	t, err := treeOf(reflect.ValueOf(s.Config))
	if err != nil {
		return nil, err
	}
	o := without(t.(object), NodeFields...)
	p, err := treeOf(reflect.ValueOf(s.Page))
	if err != nil {
		return nil, err
	}
	o = append(o, member{"page", p})
	pruned, _ := prune(o, true).(object)
	for _, path := range sortedKeys(s.Refs) { // a file's own references, never a value
		if !refs {
			break
		}
		raw, _ := json.Marshal(s.Refs[path])
		addMember(&pruned, strings.Split(strings.TrimSuffix(path, ".secret"), "."), member{"secret", json.RawMessage(raw)})
	}
	return pruned, nil
}

// Encode writes sales as a file Decode reads back to the same sales:
// "yaml" or "json". Secrets are never written: a file without one keeps
// the stored one (secrets.go).
func Encode(sales []Sale, format string) ([]byte, error) {
	var list []any
	for i := range sales {
		t, err := sales[i].tree(true)
		if err != nil {
			return nil, fmt.Errorf("sale %s: %w", sales[i].Config.ID, err)
		}
		list = append(list, t)
	}
	doc := object{{"sales", list}}
	switch format {
	case "json":
		var b bytes.Buffer
		if err := json.Indent(&b, jsonOf(doc), "", "  "); err != nil {
			return nil, err
		}
		b.WriteByte('\n')
		return b.Bytes(), nil
	case "yaml":
		n, err := yamlOf(doc)
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(n); err != nil {
			return nil, err
		}
		return b.Bytes(), enc.Close()
	}
	return nil, fmt.Errorf("the format is yaml or json, not %q", format)
}

// Body is the configuration of s as PUT /admin/events/{id} takes it:
// every field written (null for none), so the PUT, which applies its
// body over the stored configuration, replaces every field; the node's
// fields left out, so it keeps them; and the secrets of send (paths as
// in Refs) with their values, the others left out, so the node keeps
// the stored ones.
func (s *Sale) Body(send []string) ([]byte, error) {
	t, err := treeOf(reflect.ValueOf(s.Config))
	if err != nil {
		return nil, err
	}
	o := without(t.(object), NodeFields...)
	return jsonOf(setSecrets(o, &s.Config, send)), nil
}

// PageJSON is s's page as PUT /admin/events/{id}/page takes it.
func (s *Sale) PageJSON() []byte {
	t, _ := treeOf(reflect.ValueOf(s.Page))
	if t = prune(t, true); t == nil {
		t = object{}
	}
	return jsonOf(t) // decoded into a new page: what is left out is empty
}

// sortedKeys is m's keys in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
