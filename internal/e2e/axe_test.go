package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// axeTags are the rule sets axe-core checks: WCAG 2.0, 2.1 and 2.2 at
// levels A and AA.
const axeTags = `["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]`

// axePath is axe-core as scripts/install-deps.sh installs it (npm ci of
// testdata/axe, which pins the version).
var axePath = filepath.Join("testdata", "axe", "node_modules", "axe-core", "axe.min.js")

var axeOnce = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile(axePath)
	return string(b), err
})

// axeSource returns axe-core's script. Without it the test skips, except
// under CI=true, where it fails: scripts/install-deps.sh installs it.
func axeSource(t *testing.T) string {
	t.Helper()
	src, err := axeOnce()
	if err != nil {
		msg := fmt.Sprintf("axe-core not installed (%v); run scripts/install-deps.sh", err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " [CI=true: a missing checker is a failure]")
		}
		t.Skip(msg)
	}
	return src
}

// axeViolation is what the test reports of one axe-core violation.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		Summary string `json:"failureSummary"`
		HTML    string `json:"html"`
	} `json:"nodes"`
}

func (v axeViolation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s", v.ID, v.Impact, v.Help)
	for _, n := range v.Nodes {
		fmt.Fprintf(&b, "\n\t\t%v %.160s\n\t\t\t%s", n.Target, n.HTML, strings.ReplaceAll(n.Summary, "\n", " "))
	}
	return b.String()
}

// axe runs axe-core on the tab's page as it is now, at WCAG 2.2 AA, and
// fails the test with every violation: its rule, impact, help and the
// elements it found. It returns how many violations there were.
func (p *tab) axe(what string) int {
	p.t.Helper()
	src := axeSource(p.t)
	ctx, cancel := context.WithTimeout(p.ctx, 3*nodetest.Patience)
	defer cancel()
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof axe === "object"`))
	if err == nil && !loaded {
		_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](src+"\n;true"))
	}
	if err != nil {
		p.t.Fatalf("tab %s: inject axe-core: %v", p.name, err)
	}
	js := `axe.run(document, {runOnly: {type: "tag", values: ` + axeTags + `}, resultTypes: ["violations"]}).then((r) => r.violations)`
	vs, err := chromedp.Run(ctx, chromedp.Evaluate[[]axeViolation](js, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("tab %s: axe.run on %s: %v", p.name, what, err)
	}
	for _, v := range vs {
		p.t.Errorf("axe: %s, %s: %s", p.name, what, v)
	}
	return len(vs)
}
