package conform

import (
	"reflect"
	"strings"
)

// tightenTree closes the contract's answers for the tests, in doc (the
// contract as a JSON tree): every object an answer documents with
// properties and no additionalProperties of its own gets
// additionalProperties: false, so a field the node writes that the
// contract does not name fails the check; and every writeOnly property
// (a secret) becomes the schema false, so an answer that shows one fails.
// The published contract leaves answers open (a client ignores fields it
// does not know, so adding one is not a breaking change); the tests hold
// the node to naming each one.
//
// An object that is a branch of an allOf is left open (closing it would
// refuse the other branches' properties); its properties are closed.
func tightenTree(doc map[string]any) {
	var answers []map[string]any
	paths, _ := doc["paths"].(map[string]any)
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		for _, op := range ops {
			op, _ := op.(map[string]any)
			responses, _ := op["responses"].(map[string]any)
			for _, r := range responses {
				r := resolve(doc, r)
				content, _ := r["content"].(map[string]any)
				for _, mt := range content {
					mt, _ := mt.(map[string]any)
					if s := resolve(doc, mt["schema"]); s != nil {
						answers = append(answers, s)
					}
				}
			}
		}
	}
	open := map[any]bool{} // allOf branches, by identity
	seen := map[any]bool{}
	for _, s := range answers {
		walkTree(doc, s, seen, func(s map[string]any) {
			all, _ := s["allOf"].([]any)
			for _, b := range all {
				if b := resolve(doc, b); b != nil {
					open[key(b)] = true
				}
			}
		})
	}
	clear(seen)
	for _, s := range answers {
		walkTree(doc, s, seen, func(s map[string]any) {
			props, _ := s["properties"].(map[string]any)
			for name, p := range props {
				if p := resolve(doc, p); p != nil && p["writeOnly"] == true {
					props[name] = false
				}
			}
			if _, set := s["additionalProperties"]; len(props) > 0 && !set && !open[key(s)] {
				s["additionalProperties"] = false
			}
		})
	}
}

// key is a map's identity.
func key(m map[string]any) any { return reflect.ValueOf(m).UnsafePointer() }

// resolve follows a local $ref ("#/a/b") in doc; nil for anything but
// an object.
func resolve(doc map[string]any, v any) map[string]any {
	m, _ := v.(map[string]any)
	for m != nil {
		ref, ok := m["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#/") {
			return m
		}
		var cur any = doc
		for _, p := range strings.Split(ref[2:], "/") {
			p = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
			next, _ := cur.(map[string]any)
			cur = next[p]
		}
		m, _ = cur.(map[string]any)
	}
	return nil
}

// walkTree calls f on s and every schema below it, once each.
func walkTree(doc, s map[string]any, seen map[any]bool, f func(map[string]any)) {
	if s == nil || seen[key(s)] {
		return
	}
	seen[key(s)] = true
	f(s)
	props, _ := s["properties"].(map[string]any)
	for _, p := range props {
		walkTree(doc, resolve(doc, p), seen, f)
	}
	walkTree(doc, resolve(doc, s["items"]), seen, f)
	walkTree(doc, resolve(doc, s["additionalProperties"]), seen, f)
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := s[k].([]any)
		for _, b := range list {
			walkTree(doc, resolve(doc, b), seen, f)
		}
	}
}
