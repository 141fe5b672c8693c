package event

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestDefaultConfig: DefaultConfig holds the defaults the docs and the
// console show (docs/configure.md, GET /admin/defaults).
func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if c.Mode != FCFS || c.PerUserLimit != 1 || c.AdmitRatePerSecond != 100 || c.AdmissionTTLSeconds != 300 ||
		c.ClaimTTLSeconds != 900 || c.NoShowGraceSeconds != 15 || c.Buckets != 1 || c.JoinShards != 1 ||
		c.RandomWindowSeconds != 0 || c.MaxActive != 0 || c.ReserveUnits != 0 || c.Paused {
		t.Errorf("DefaultConfig() = %+v", c)
	}
	if !c.StartsAt.IsZero() || c.ID != "" || c.Seed != "" {
		t.Errorf("DefaultConfig has an id, a start or a seed: %+v", c)
	}
}

// TestConfigFieldsDocumented: every field of Config says what it is and,
// for the fields staff set, its default or that it is required, and when
// it locks (or that it never does).
func TestConfigFieldsDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	// Set by the store or the path, never by staff: no default, no lock.
	notStaff := map[string]bool{"ID": true, "PageVersion": true, "Version": true, "Seed": true, "LaneSeeds": true, "SeedCommitment": true}
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Config" {
			return true
		}
		found = true
		for _, field := range ts.Type.(*ast.StructType).Fields.List {
			name := field.Names[0].Name
			doc := strings.Join(strings.Fields(field.Doc.Text()), " ")
			if doc == "" {
				t.Errorf("Config.%s has no doc comment", name)
				continue
			}
			if notStaff[name] {
				continue
			}
			if !strings.Contains(doc, "Default: ") && !strings.Contains(doc, "Required.") && name != "Limits" {
				t.Errorf("Config.%s: its doc says no default (\"Default: …\") and not \"Required.\"", name)
			}
			if !strings.Contains(doc, "Locks ") && !strings.Contains(doc, "lock") {
				t.Errorf("Config.%s: its doc does not say when it locks (or that it never does)", name)
			}
		}
		return false
	})
	if !found {
		t.Fatal("no type Config in config.go")
	}
}
