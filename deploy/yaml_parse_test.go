package deploy_test

import (
	"strconv"
	"strings"
)

// node parses the mapping or sequence whose lines start at indent.
func (p *yparser) node(indent int) (any, error) {
	if p.i >= len(p.lines) {
		return nil, p.errorf("missing value")
	}
	l := p.lines[p.i]
	if l.indent != indent {
		return nil, p.errorf("indentation %d, want %d", l.indent, indent)
	}
	if l.text == "-" || strings.HasPrefix(l.text, "- ") {
		return p.sequence(indent)
	}
	return p.mapping(indent)
}

func (p *yparser) sequence(indent int) (any, error) {
	var out []any
	for p.i < len(p.lines) && p.lines[p.i].indent == indent && (p.lines[p.i].text == "-" || strings.HasPrefix(p.lines[p.i].text, "- ")) {
		rest := strings.TrimPrefix(strings.TrimPrefix(p.lines[p.i].text, "-"), " ")
		switch {
		case rest == "":
			p.i++
			if p.i >= len(p.lines) || p.lines[p.i].indent <= indent {
				return nil, p.errorf("empty sequence item")
			}
			v, err := p.node(p.lines[p.i].indent)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		case isMapLine(rest) || strings.HasPrefix(rest, "- "):
			// "- key: value" opens a mapping (or a nested sequence) two
			// columns in: reread this line as its first line.
			p.lines[p.i].indent, p.lines[p.i].text = indent+2, rest
			v, err := p.node(indent + 2)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		default:
			v, err := p.scalar(rest)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			p.i++
		}
	}
	return out, nil
}

func (p *yparser) mapping(indent int) (any, error) {
	out := map[string]any{}
	explicit := map[string]bool{} // keys written here; merged ones yield to them
	for p.i < len(p.lines) && p.lines[p.i].indent == indent {
		text := p.lines[p.i].text
		if strings.HasPrefix(text, "- ") {
			return nil, p.errorf("sequence item inside a mapping")
		}
		key, rest, ok := splitKey(text)
		if !ok {
			return nil, p.errorf("want key: value, got %q", text)
		}
		if explicit[key] {
			return nil, p.errorf("duplicate key %q", key)
		}
		p.i++
		anchor := ""
		if strings.HasPrefix(rest, "&") {
			anchor, rest, _ = strings.Cut(rest[1:], " ")
		}
		var v any
		var err error
		switch {
		case rest != "":
			p.i--
			v, err = p.scalar(rest)
			p.i++
		case p.i < len(p.lines) && p.lines[p.i].indent > indent:
			v, err = p.node(p.lines[p.i].indent)
		case p.i < len(p.lines) && p.lines[p.i].indent == indent && strings.HasPrefix(p.lines[p.i].text, "- "):
			v, err = p.sequence(indent) // "key:" then "- item" at the same column
		default:
			v = nil // "key:" alone is null
		}
		if err != nil {
			return nil, err
		}
		if anchor != "" {
			p.anchors[anchor] = v
		}
		if key == "<<" {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, p.errorf("<< merges a mapping only")
			}
			for k, mv := range m {
				if !explicit[k] {
					out[k] = mv
				}
			}
			continue
		}
		out[key] = v
		explicit[key] = true
	}
	if p.i < len(p.lines) && p.lines[p.i].indent > indent {
		return nil, p.errorf("unexpected indentation")
	}
	return out, nil
}

// isMapLine reports whether s starts a mapping entry.
func isMapLine(s string) bool {
	_, _, ok := splitKey(s)
	return ok
}

// splitKey splits "key: rest" or "key:" (key plain or quoted).
func splitKey(s string) (key, rest string, ok bool) {
	if s == "" || strings.ContainsRune("[{", rune(s[0])) {
		return "", "", false
	}
	if s[0] == '"' || s[0] == '\'' {
		end := strings.IndexByte(s[1:], s[0])
		if end < 0 || !strings.HasPrefix(s[end+2:], ":") {
			return "", "", false
		}
		key, rest = s[1:end+1], s[end+3:]
	} else {
		i := strings.Index(s, ": ")
		if i < 0 && strings.HasSuffix(s, ":") {
			i = len(s) - 1
		}
		if i <= 0 {
			return "", "", false
		}
		key, rest = s[:i], s[i+1:]
	}
	if rest != "" && rest[0] != ' ' {
		return "", "", false
	}
	return key, strings.TrimSpace(rest), true
}

// scalar parses an inline value: alias, quoted, flow or plain.
func (p *yparser) scalar(s string) (any, error) {
	switch {
	case strings.HasPrefix(s, "*"):
		v, ok := p.anchors[s[1:]]
		if !ok {
			return nil, p.errorf("unknown alias %s", s)
		}
		return v, nil
	case s[0] == '"':
		v, err := strconv.Unquote(s)
		if err != nil {
			return nil, p.errorf("bad double-quoted string %s", s)
		}
		return v, nil
	case s[0] == '\'':
		if len(s) < 2 || s[len(s)-1] != '\'' {
			return nil, p.errorf("bad single-quoted string %s", s)
		}
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'"), nil
	case s[0] == '[' || s[0] == '{':
		return p.flow(s)
	case strings.HasPrefix(s, "&") || strings.HasPrefix(s, "!") || strings.HasPrefix(s, "%") || strings.HasPrefix(s, "@") || strings.HasPrefix(s, "`"):
		return nil, p.errorf("unsupported value %s", s)
	case strings.Contains(s, ": ") || strings.HasSuffix(s, ":"):
		return nil, p.errorf("plain value with a colon: quote %s", s)
	}
	return s, nil
}

// flow parses a one-line [a, b] or {k: v} of scalars.
func (p *yparser) flow(s string) (any, error) {
	closing := map[byte]byte{'[': ']', '{': '}'}[s[0]]
	if s[len(s)-1] != closing {
		return nil, p.errorf("unclosed flow collection %s", s)
	}
	var items []string
	var quote byte
	start := 1
	for i := 1; i < len(s)-1; i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '{':
			return nil, p.errorf("nested flow collection in %s", s)
		case c == ',':
			items = append(items, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if last := strings.TrimSpace(s[start : len(s)-1]); last != "" {
		items = append(items, last)
	}
	if closing == ']' {
		out := make([]any, 0, len(items))
		for _, it := range items {
			v, err := p.scalar(it)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	out := map[string]any{}
	for _, it := range items {
		k, rest, ok := splitKey(it)
		if !ok {
			return nil, p.errorf("want key: value in %s", s)
		}
		v, err := p.scalar(rest)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}
