package settings

import (
	"errors"
	"strings"
)

// The markers around a generated block in a Markdown document, each on a
// line of its own.
const (
	BeginMarker = "<!-- settings:begin -->"
	EndMarker   = "<!-- settings:end -->"
)

// Markdown renders list as a Markdown table, one row per setting in list
// order: variable, flag, default (blank when empty: the doc says what
// empty means) and meaning (the doc; a secret's says it is not logged).
func Markdown(list []Setting) string {
	var b strings.Builder
	b.WriteString("| variable | flag | default | meaning |\n|---|---|---|---|\n")
	for _, s := range list {
		def := ""
		if s.Default != "" {
			def = "`" + s.Default + "`"
		}
		doc := s.Doc
		if s.Secret {
			doc += "; secret: never logged"
		}
		b.WriteString("| `" + s.Env + "` | `-" + s.Name + "` | " + def + " | " + doc + " |\n")
	}
	return b.String()
}

// Block returns the text of doc between its markers, without the marker
// lines.
func Block(doc string) (string, error) {
	_, body, _, err := cut(doc)
	return body, err
}

// Splice returns doc with the text between its markers replaced by body.
func Splice(doc, body string) (string, error) {
	head, _, tail, err := cut(doc)
	if err != nil {
		return "", err
	}
	return head + body + tail, nil
}

// cut splits doc into everything up to and including the begin marker's
// line, the text between the markers, and everything from the end
// marker's line on.
func cut(doc string) (head, body, tail string, err error) {
	begin := strings.Index(doc, BeginMarker+"\n")
	end := strings.Index(doc, EndMarker)
	if begin < 0 || end < 0 || end < begin || strings.Count(doc, BeginMarker) != 1 || strings.Count(doc, EndMarker) != 1 {
		return "", "", "", errors.New("settings: want one " + BeginMarker + " line and one " + EndMarker + " after it")
	}
	begin += len(BeginMarker) + 1
	return doc[:begin], doc[begin:end], doc[end:], nil
}
