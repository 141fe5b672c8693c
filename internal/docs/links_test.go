package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
)

// anchor is GitHub's anchor of a Markdown heading.
func anchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocLinks: every relative link of README.md and docs/*.md names a
// file of the repository and, with #anchor into a Markdown file, one of
// its headings.
func TestDocLinks(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, f)
		for _, m := range mdLink.FindAllStringSubmatch(string(raw), -1) {
			link := m[1]
			if strings.Contains(link, "://") {
				continue
			}
			path, frag, _ := strings.Cut(link, "#")
			target := f
			if path != "" {
				target = filepath.Join(filepath.Dir(f), path)
			}
			body, err := os.ReadFile(target)
			if err != nil {
				if _, serr := os.Stat(target); serr == nil {
					continue // a directory
				}
				t.Errorf("%s: link %s: %v", name, link, err)
				continue
			}
			if frag == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			found := false
			for _, h := range heading.FindAllStringSubmatch(string(body), -1) {
				if anchor(h[1]) == frag {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s: link %s: no heading with anchor #%s", name, link, frag)
			}
		}
	}
}
