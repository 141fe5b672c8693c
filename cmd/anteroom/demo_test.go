package main

import (
	"os/exec"
	"regexp"
	"testing"
)

// TestDemoCommand runs the README's first command as written,
// `go run ./cmd/anteroom demo` from the repository's root, with nothing
// else installed or configured: the sale on embedded Redis and NATS must
// end with a balanced reconciliation (exit status 0) and nothing oversold.
func TestDemoCommand(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to run the demo as the README does: %v", err)
	}
	cmd := exec.Command(goTool, "run", "./cmd/anteroom", "demo")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./cmd/anteroom demo: %v\n%s", err, out)
	}
	for _, want := range []string{
		`(?m)^\s+oversold\s+0$`,
		`(?m)^\s+users above their limit\s+0$`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("the demo's report has no line %s:\n%s", want, out)
		}
	}
}
