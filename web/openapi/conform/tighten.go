package conform

import "github.com/getkin/kin-openapi/openapi3"

// tighten closes the contract's answers for the tests: every object an
// answer documents with properties and no additionalProperties of its own
// gets additionalProperties: false, so a field the node sends that the
// contract does not name fails the check. The published contract leaves
// answers open (a client ignores fields it does not know, so adding one
// is not a breaking change); the tests hold the node to naming each one.
//
// An object that is a branch of an allOf is left as written (closing it
// would refuse the other branches' properties); its properties are
// closed.
func tighten(doc *openapi3.T) {
	var answers []*openapi3.SchemaRef
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, resp := range op.Responses.Map() {
				if resp.Value == nil {
					continue
				}
				for _, mt := range resp.Value.Content {
					answers = append(answers, mt.Schema)
				}
			}
		}
	}
	branches := map[*openapi3.Schema]bool{}
	seen := map[*openapi3.Schema]bool{}
	for _, s := range answers {
		walk(s, seen, func(s *openapi3.Schema) {
			for _, b := range s.AllOf {
				if b.Value != nil {
					branches[b.Value] = true
				}
			}
		})
	}
	clear(seen)
	for _, s := range answers {
		walk(s, seen, func(s *openapi3.Schema) {
			if len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil && !branches[s] {
				no := false
				s.AdditionalProperties.Has = &no
			}
		})
	}
}

// walk calls f on ref's schema and every schema below it, once each.
func walk(ref *openapi3.SchemaRef, seen map[*openapi3.Schema]bool, f func(*openapi3.Schema)) {
	if ref == nil || ref.Value == nil || seen[ref.Value] {
		return
	}
	s := ref.Value
	seen[s] = true
	f(s)
	for _, p := range s.Properties {
		walk(p, seen, f)
	}
	walk(s.Items, seen, f)
	walk(s.AdditionalProperties.Schema, seen, f)
	for _, list := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
		for _, b := range list {
			walk(b, seen, f)
		}
	}
}
