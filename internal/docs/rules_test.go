package docs

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/door/rules"
	"github.com/anteroom/anteroom/event"
)

// TestRulesTable: docs/configure.md's tables of the door rules' variables
// and functions are door/rules' registry's, byte for byte.
func TestRulesTable(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "docs", "configure.md"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := rules.TableBlock(string(raw))
	if err != nil {
		t.Fatalf("docs/configure.md: %v; regenerate with: %s", err, rules.Regenerate)
	}
	if want := rules.Table(); got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := range max(len(gl), len(wl)) {
			g, w := "(end)", "(end)"
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("docs/configure.md's rules tables are not door/rules' registry's; regenerate them from the repository root with:\n\t%s\nfirst difference, line %d of the section:\ndocs:     %q\nregistry: %q", rules.Regenerate, i+1, g, w)
				break
			}
		}
	}
}

// anyList is a node whose every list exists and is empty.
type anyList struct{}

func (anyList) User(string, string) door.Membership     { return door.Absent }
func (anyList) Addr(string, netip.Addr) door.Membership { return door.Absent }
func (anyList) Hash(string) uint64                      { return 0 }

// TestRulesExamples: the rules of docs/configure.md's "Door rules" JSON
// example are a valid door and compile.
func TestRulesExamples(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "docs", "configure.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Door rules\n")
	if !ok {
		t.Fatal(`docs/configure.md has no "## Door rules" section`)
	}
	_, block, ok := strings.Cut(section, "```json\n")
	if !ok {
		t.Fatal(`"Door rules" has no json example`)
	}
	block, _, _ = strings.Cut(block, "```")
	var cfg event.Config
	if err := json.Unmarshal([]byte(block), &cfg); err != nil {
		t.Fatalf("the example: %v", err)
	}
	if len(cfg.Door.Rules) < 5 {
		t.Fatalf("the example has %d rules", len(cfg.Door.Rules))
	}
	if err := rules.New(anyList{}, nil).Compile(&cfg, nil); err != nil {
		t.Errorf("the example does not compile: %v", err)
	}
}
