package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/door/rules"
)

// TestRulesTableCommand: `anteroom rules-table` prints the tables, and
// with -w rewrites only the text between a file's markers; a file
// without them is refused, unchanged.
func TestRulesTableCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(t.Context(), []string{"rules-table"}, func(string) string { return "" }, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if out.String() != rules.Table() {
		t.Error("rules-table printed something else than the tables")
	}
	path := filepath.Join(t.TempDir(), "doc.md")
	doc := "# Doc\n\n" + rules.TableBegin + "\nstale\n" + rules.TableEnd + "\n\nafter\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(t.Context(), []string{"rules-table", "-w", path}, func(string) string { return "" }, &out, &errb); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if want := "# Doc\n\n" + rules.TableBegin + "\n" + rules.Table() + rules.TableEnd + "\n\nafter\n"; string(got) != want {
		t.Errorf("rewritten:\n%s", got)
	}
	bare := filepath.Join(t.TempDir(), "bare.md")
	if err := os.WriteFile(bare, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(t.Context(), []string{"rules-table", "-w", bare}, func(string) string { return "" }, &out, &errb); err == nil || !strings.Contains(err.Error(), "rules:begin") {
		t.Errorf("a file without markers: %v", err)
	}
	if got, _ := os.ReadFile(bare); string(got) != "no markers\n" {
		t.Errorf("a refused file changed: %q", got)
	}
}
