package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// ciCommands are the commands CI runs itself: .ci/run runs make test.
var ciCommands = map[string]string{
	"make test": ".ci/run",
}

// shellBlock is one fenced sh or bash block of a Markdown file.
type shellBlock struct {
	file     string
	line     int      // of the opening fence, from 1
	testedBy []string // tests named by a tested-by line above it
	reads    string   // the readme-test name above it, if any
	lines    []string
}

var (
	fence     = regexp.MustCompile("^\\s*```\\s*([A-Za-z0-9_-]*)\\s*$")
	testedBy  = regexp.MustCompile(`^<!-- tested-by: ([A-Za-z0-9_, ]+) -->$`)
	readsName = regexp.MustCompile(`^<!-- readme-test: ([a-z0-9-]+) -->$`)
)

// shellBlocks returns the sh and bash blocks of the Markdown text, with
// the markers on the comment lines right above each, and reports a
// tested-by marker that is not right above a fenced block.
func shellBlocks(t *testing.T, file, text string) []shellBlock {
	t.Helper()
	var blocks []shellBlock
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			if testedBy.MatchString(lines[i]) {
				j := i + 1
				for j < len(lines) && strings.HasPrefix(lines[j], "<!--") {
					j++
				}
				if j == len(lines) || fence.FindStringSubmatch(lines[j]) == nil {
					t.Errorf("%s:%d: a tested-by line must stand right above a fenced block", file, i+1)
				}
			}
			continue
		}
		b := shellBlock{file: file, line: i + 1}
		for j := i - 1; j >= 0 && strings.HasPrefix(lines[j], "<!--"); j-- {
			if tm := testedBy.FindStringSubmatch(lines[j]); tm != nil {
				for _, name := range strings.Split(tm[1], ",") {
					b.testedBy = append(b.testedBy, strings.TrimSpace(name))
				}
			}
			if rm := readsName.FindStringSubmatch(lines[j]); rm != nil {
				b.reads = rm[1]
			}
		}
		lang := m[1]
		for i++; i < len(lines) && !fence.MatchString(lines[i]); i++ {
			b.lines = append(b.lines, lines[i])
		}
		if lang == "sh" || lang == "bash" || lang == "shell" || lang == "console" {
			blocks = append(blocks, b)
		}
	}
	return blocks
}

// testBodies maps every Test function of the repository's _test.go files
// to its source text.
func testBodies(t *testing.T) map[string]string {
	t.Helper()
	head := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(t \*testing\.T\) \{$`)
	bodies := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src := string(raw)
		for _, loc := range head.FindAllStringSubmatchIndex(src, -1) {
			body := src[loc[0]:]
			if end := strings.Index(body, "\n}\n"); end >= 0 {
				body = body[:end]
			}
			bodies[src[loc[2]:loc[3]]] = body
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bodies
}

// subcommand returns the words naming the anteroom subcommand a command
// line runs ("demo"; "keys", "list"), or nil when it runs no anteroom.
func subcommand(line string) []string {
	words := strings.Fields(line)
	switch {
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/anteroom":
		words = words[3:]
	case len(words) >= 1 && words[0] == "anteroom":
		words = words[1:]
	default:
		return nil
	}
	var sub []string
	for _, w := range words {
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "#") || len(sub) == 2 {
			break
		}
		sub = append(sub, w)
	}
	return sub
}

// TestDocCommands: every command in README.md and docs/*.md is run by a
// test or by CI. A block marked tested-by names tests that exist; when it
// is also marked readme-test, one of them reads it (readmeBlock(t,
// "name")); every anteroom command in it has its subcommand's words as
// string literals in one of them (they run it). An unmarked block holds
// only commands CI runs.
func TestDocCommands(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	for cmd, runner := range ciCommands {
		if runner == ".ci/run" && !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(cmd)+`$`).Match(ci) {
			t.Errorf(".ci/run does not run %q", cmd)
		}
	}
	bodies := testBodies(t)
	seen := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, f)
		for _, b := range shellBlocks(t, name, string(raw)) {
			seen++
			checkBlock(t, b, bodies)
		}
	}
	if seen == 0 {
		t.Fatal("no sh block found: the README's two commands are one at least")
	}
}

func checkBlock(t *testing.T, b shellBlock, bodies map[string]string) {
	t.Helper()
	where := b.file + ":" + strconv.Itoa(b.line)
	if len(b.testedBy) == 0 {
		for _, l := range b.lines {
			cmd, _, _ := strings.Cut(l, "#")
			cmd = strings.TrimSpace(cmd)
			if cmd == "" {
				continue
			}
			if _, ok := ciCommands[cmd]; !ok {
				t.Errorf("%s: %q is run by no test and not by CI: mark the block <!-- tested-by: TestName --> with the test that runs it", where, cmd)
			}
		}
		return
	}
	var named []string
	for _, n := range b.testedBy {
		body, ok := bodies[n]
		if !ok {
			t.Errorf("%s: tested-by %s: no such test in the repository", where, n)
			continue
		}
		named = append(named, body)
	}
	if len(named) < len(b.testedBy) {
		return
	}
	if b.reads != "" && !slices.ContainsFunc(named, func(body string) bool {
		return strings.Contains(body, `readmeBlock(t, "`+b.reads+`")`)
	}) {
		t.Errorf("%s: none of %v reads the block %q", where, b.testedBy, b.reads)
	}
	for _, l := range b.lines {
		sub := subcommand(l)
		if sub == nil {
			continue
		}
		if !slices.ContainsFunc(named, func(body string) bool {
			for _, w := range sub {
				if !strings.Contains(body, `"`+w+`"`) {
					return false
				}
			}
			return true
		}) {
			t.Errorf("%s: none of %v runs %q (its words %q as string literals)", where, b.testedBy, strings.TrimSpace(l), sub)
		}
	}
	if b.reads == "" && !slices.ContainsFunc(b.lines, func(l string) bool { return subcommand(l) != nil }) {
		t.Errorf("%s: tested-by a block that neither a test reads (readme-test) nor runs anteroom: say how it is run", where)
	}
}
