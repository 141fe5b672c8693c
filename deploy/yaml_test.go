package deploy_test

import (
	"fmt"
	"strconv"
	"strings"
)

// parseYAML reads the block-style YAML the deployment files are written
// in: mappings, sequences, plain and quoted scalars, one-line flow
// sequences and mappings of scalars, block scalars (| and >), anchors,
// aliases and << merges, and --- between documents. Anything else is an
// error, so the files stay in a subset both this reader and every real
// YAML parser agree on. (The module graph holds go.yaml.in/yaml/v3 only
// indirectly; importing it would change go.mod.) Scalars stay strings.
func parseYAML(src string) ([]any, error) {
	var docs []any
	for _, part := range splitDocs(src) {
		p := &yparser{anchors: map[string]any{}}
		if err := p.lex(part.text, part.line); err != nil {
			return nil, err
		}
		if len(p.lines) == 0 {
			continue
		}
		v, err := p.node(p.lines[0].indent)
		if err != nil {
			return nil, err
		}
		if p.i < len(p.lines) {
			return nil, p.errorf("unexpected indentation")
		}
		docs = append(docs, v)
	}
	return docs, nil
}

type ydoc struct {
	text string
	line int
}

func splitDocs(src string) []ydoc {
	var out []ydoc
	cur, start := []string{}, 1
	for i, l := range strings.Split(src, "\n") {
		if strings.TrimRight(l, " ") == "---" {
			out = append(out, ydoc{strings.Join(cur, "\n"), start})
			cur, start = nil, i+2
			continue
		}
		cur = append(cur, l)
	}
	return append(out, ydoc{strings.Join(cur, "\n"), start})
}

type yline struct {
	no, indent int
	text       string
}

type yparser struct {
	lines   []yline
	i       int
	anchors map[string]any
}

func (p *yparser) errorf(format string, a ...any) error {
	no := 0
	if p.i < len(p.lines) {
		no = p.lines[p.i].no
	} else if len(p.lines) > 0 {
		no = p.lines[len(p.lines)-1].no
	}
	return fmt.Errorf("line %d: %s", no, fmt.Sprintf(format, a...))
}

// lex splits src into significant lines, keeping block scalars whole.
func (p *yparser) lex(src string, first int) error {
	raw := strings.Split(src, "\n")
	for i := 0; i < len(raw); i++ {
		l := raw[i]
		body := strings.TrimLeft(l, " ")
		if strings.HasPrefix(body, "\t") {
			return fmt.Errorf("line %d: tab in indentation", first+i)
		}
		text := stripComment(body)
		if text == "" {
			continue
		}
		indent := len(l) - len(body)
		if marker, ok := blockMarker(text); ok {
			// The scalar is every following line indented deeper (or blank).
			var block []string
			for i+1 < len(raw) && (strings.TrimSpace(raw[i+1]) == "" || len(raw[i+1])-len(strings.TrimLeft(raw[i+1], " ")) > indent) {
				i++
				block = append(block, raw[i])
			}
			text = strings.TrimSuffix(text, marker) + strconv.Quote(dedent(block, marker))
		}
		p.lines = append(p.lines, yline{no: first + i, indent: indent, text: text})
	}
	return nil
}

func blockMarker(text string) (string, bool) {
	for _, m := range []string{"|-", "|", ">-", ">"} {
		if strings.HasSuffix(text, ": "+m) || strings.HasSuffix(text, "- "+m) || text == "- "+m {
			return m, true
		}
	}
	return "", false
}

func dedent(block []string, marker string) string {
	for len(block) > 0 && strings.TrimSpace(block[len(block)-1]) == "" {
		block = block[:len(block)-1]
	}
	cut := -1
	for _, l := range block {
		if t := strings.TrimLeft(l, " "); t != "" && (cut < 0 || len(l)-len(t) < cut) {
			cut = len(l) - len(t)
		}
	}
	out := make([]string, len(block))
	for i, l := range block {
		if len(l) >= cut && cut >= 0 {
			out[i] = l[cut:]
		}
	}
	s := strings.Join(out, "\n")
	if strings.HasPrefix(marker, ">") {
		s = strings.ReplaceAll(s, "\n", " ")
	}
	if !strings.HasSuffix(marker, "-") {
		s += "\n"
	}
	return s
}

// stripComment removes a # comment that is not inside quotes.
func stripComment(s string) string {
	var quote byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
		case c == '"' || c == '\'':
			if i == 0 || strings.ContainsRune(" [{:,-", rune(s[i-1])) {
				quote = c
			}
		case c == '#' && (i == 0 || s[i-1] == ' '):
			return strings.TrimRight(s[:i], " ")
		}
	}
	return strings.TrimRight(s, " ")
}
