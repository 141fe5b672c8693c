package rules

import (
	"errors"
	"strings"
)

// The markers around docs/configure.md's generated rules tables, each on
// a line of its own.
const (
	TableBegin = "<!-- rules:begin -->"
	TableEnd   = "<!-- rules:end -->"
)

// Regenerate is how to bring docs/configure.md's rules tables back in
// line with the registry, from the repository's root.
const Regenerate = "go run ./cmd/anteroom rules-table -w docs/configure.md"

// Table is the text docs/configure.md holds between its rules markers:
// the variables, then the functions, of the registry (registry.go).
func Table() string {
	var b strings.Builder
	b.WriteString("These tables are generated from the registry in `door/rules/registry.go`:\n" +
		"edit it there, then run `" + Regenerate + "`.\n\n")
	b.WriteString("| variable | type | what |\n|---|---|---|\n")
	for _, v := range Variables() {
		b.WriteString("| `" + v.Name + "` | " + cell(v.Signature) + " | " + cell(v.Doc) + " |\n")
	}
	b.WriteString("\n| function | signature | what |\n|---|---|---|\n")
	for _, f := range Functions() {
		name := "`" + f.Name + "`"
		if f.Name == "standard" || f.Name == "strings" {
			name = f.Name
		}
		b.WriteString("| " + name + " | " + cell(f.Signature) + " | " + cell(f.Doc) + " |\n")
	}
	return b.String()
}

// cell is s in a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// SpliceTable returns doc with the text between its rules markers
// replaced by Table().
func SpliceTable(doc string) (string, error) {
	head, _, tail, err := cutTable(doc)
	if err != nil {
		return "", err
	}
	return head + Table() + tail, nil
}

// TableBlock returns the text of doc between its rules markers.
func TableBlock(doc string) (string, error) {
	_, body, _, err := cutTable(doc)
	return body, err
}

// cutTable splits doc around the text between its markers.
func cutTable(doc string) (head, body, tail string, err error) {
	begin := strings.Index(doc, TableBegin+"\n")
	end := strings.Index(doc, TableEnd)
	if begin < 0 || end < begin || strings.Count(doc, TableBegin) != 1 || strings.Count(doc, TableEnd) != 1 {
		return "", "", "", errors.New("rules: want one " + TableBegin + " line and one " + TableEnd + " after it")
	}
	begin += len(TableBegin) + 1
	return doc[:begin], doc[begin:end], doc[end:], nil
}
