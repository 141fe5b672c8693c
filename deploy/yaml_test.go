package deploy_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// parseYAML reads every document of src with go.yaml.in/yaml/v3 and
// returns each as plain Go values: mappings as map[string]any, sequences
// as []any, scalars as their text (strings, so the tests compare what the
// file says, "2" and "true" included) and null as nil. Aliases and <<
// merges are resolved, keys written in a mapping win over merged ones,
// and a key written twice or a tag the files have no use for (!!binary,
// local tags) is an error, never a silent misreading. Empty documents are
// left out.
func parseYAML(src string) ([]any, error) {
	dec := yaml.NewDecoder(strings.NewReader(src))
	var docs []any
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(doc.Content) == 0 {
			continue
		}
		v, err := plain(doc.Content[0])
		if err != nil {
			return nil, err
		}
		docs = append(docs, v)
	}
}

// plainTags are the scalar tags whose text is the value.
var plainTags = map[string]bool{"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!timestamp": true}

// plain turns one node into plain Go values.
func plain(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.AliasNode:
		return plain(n.Alias)
	case yaml.ScalarNode:
		switch {
		case n.Tag == "!!null":
			return nil, nil
		case plainTags[n.Tag]:
			return n.Value, nil
		}
		return nil, fmt.Errorf("line %d: unsupported tag %s", n.Line, n.Tag)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := plain(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		return mapping(n)
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node kind %d", n.Line, n.Kind)
}

// mapping reads a mapping node; written keys win over << merged ones.
func mapping(n *yaml.Node) (map[string]any, error) {
	out := map[string]any{}
	written := map[string]bool{}
	var merged []map[string]any
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, vn := n.Content[i], n.Content[i+1]
		v, err := plain(vn)
		if err != nil {
			return nil, err
		}
		if k.Tag == "!!merge" {
			ms, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("line %d: << merges a mapping only", k.Line)
			}
			merged = append(merged, ms)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: a key that is not a scalar", k.Line)
		}
		if written[k.Value] {
			return nil, fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
		}
		written[k.Value] = true
		out[k.Value] = v
	}
	for _, m := range merged {
		for mk, mv := range m {
			if _, ok := out[mk]; !ok {
				out[mk] = mv
			}
		}
	}
	return out, nil
}
