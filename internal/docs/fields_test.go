package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const (
	fieldsBegin = "<!-- event-fields:begin -->\n"
	fieldsEnd   = "<!-- event-fields:end -->\n"
	// fieldsUpdate rewrites the table instead of checking it.
	fieldsUpdate = "ANTEROOM_UPDATE_DOCS"
)

// notStaff are the Config fields the server sets, not staff.
var notStaff = map[string]bool{"PageVersion": true, "Version": true, "Seed": true, "LaneSeeds": true, "SeedCommitment": true}

// eventFieldsTable is docs/configure.md's table of event fields, made
// from the doc comments of event.Config (event/config.go): each field's
// JSON name, its default, when it locks, and the rest of its comment.
func eventFieldsTable(t *testing.T) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "event", "config.go"), nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("This table is generated from the doc comments of `event.Config`\n" +
		"(`event/config.go`): edit them there, then run\n" +
		"`" + fieldsUpdate + "=1 go test ./internal/docs -run TestEventFieldsTable`.\n\n" +
		"| field | default | locks | what |\n|---|---|---|---|\n")
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Config" {
			return true
		}
		for _, field := range ts.Type.(*ast.StructType).Fields.List {
			name := field.Names[0].Name
			if notStaff[name] || field.Tag == nil {
				continue
			}
			tag := reflect.StructTag(strings.Trim(field.Tag.Value, "`")).Get("json")
			json, _, _ := strings.Cut(tag, ",")
			doc := strings.Join(strings.Fields(field.Doc.Text()), " ")
			doc, def, _ := strings.Cut(doc, "Default: ")
			var what, locks []string
			for _, s := range strings.SplitAfter(doc, ". ") {
				if s = strings.TrimSpace(s); s == "" {
					continue
				}
				if s == "Required." {
					def = "required"
					continue
				}
				if strings.Contains(strings.ToLower(s), "lock") {
					locks = append(locks, s)
				} else {
					what = append(what, s)
				}
			}
			if def == "" {
				def = "—"
			}
			cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
			b.WriteString("| `" + json + "` | " + cell(strings.TrimSpace(def)) + " | " + cell(strings.Join(locks, " ")) + " | " + cell(strings.Join(what, " ")) + " |\n")
		}
		return false
	})
	return b.String()
}

// TestEventFieldsTable: docs/configure.md's event fields table is the one
// event.Config's doc comments make, byte for byte.
func TestEventFieldsTable(t *testing.T) {
	path := filepath.Join(root, "docs", "configure.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	before, rest, ok := strings.Cut(doc, fieldsBegin)
	if !ok {
		t.Fatalf("docs/configure.md has no %q", fieldsBegin)
	}
	got, after, ok := strings.Cut(rest, fieldsEnd)
	if !ok {
		t.Fatalf("docs/configure.md has no %q", fieldsEnd)
	}
	want := eventFieldsTable(t)
	if os.Getenv(fieldsUpdate) == "1" {
		if err := os.WriteFile(path, []byte(before+fieldsBegin+want+fieldsEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := range max(len(gl), len(wl)) {
			if i >= len(gl) || i >= len(wl) || gl[i] != wl[i] {
				g, w := "(end)", "(end)"
				if i < len(gl) {
					g = gl[i]
				}
				if i < len(wl) {
					w = wl[i]
				}
				t.Errorf("docs/configure.md's event fields table is not event.Config's; regenerate it with %s=1 go test ./internal/docs -run TestEventFieldsTable\nfirst difference, line %d:\ndocs: %q\ncode: %q", fieldsUpdate, i+1, g, w)
				break
			}
		}
	}
}
