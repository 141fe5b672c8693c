//go:build soak && linux

package soak

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
)

// TestSoakCatchesPutBack shows that the soak catches the bugs of issue 24
// that its crowd was extended for, when their fixes are taken back: for
// each, this tree is copied, the patch in testdata that reverts the fix
// (the product code only, not its tests) is applied, the copy is built,
// and a short soak of the plan that exercises the feature runs on it and
// must stop on a violation naming the broken promise; the same plans run
// on this tree's build first and must pass (the control). A patch that no
// longer applies fails the test: regenerate it from the fix (see
// testdata/README.md).
func TestSoakCatchesPutBack(t *testing.T) {
	cases := []struct {
		name  string
		patch string
		plan  plan
		want  []string // the violation names one of these
	}{
		{"bug 1: a bypass-pass claim's record no reader can decode", "putback-bug1.patch",
			plan{passUses: 8, passShare: 0.3, claimTTL: 1800},
			[]string{"5xx", "does not decode", "recorded no order"}},
		{"bug 2: a staff save after a failover re-lays stock on a server that lost grants", "putback-bug2.patch",
			// Every early grant is made while the replica lags: the
			// promoted server has none (the old code laid stock only on
			// a bucket with nothing granted).
			plan{lead: 18 * time.Second, lane: true, laneShareOf: 0.6, lagFailover: true, lagFrom: 0.25, claimTTL: 1800},
			[]string{"supply"}},
		{"bug 6: max_active counts pending claims, not people", "putback-bug6.patch",
			// The worker stops at the start, so every claim stays pending;
			// the shop finishes default-lane shoppers once done, and nine
			// pass holders (never a checkout session) hold most of two
			// claims each: the old rule counts their 15 or so claims,
			// above max_active 12, and admits nobody; counted as the nine
			// people they are, three places stay.
			plan{shop: true, passUses: 9, passShare: 0.3, stopWorker: 60 * time.Second, claimTTL: 1800},
			[]string{"frontier stood"}},
	}
	// The control: this tree's build runs every plan without a violation,
	// so what the patched builds trip on is the bug taken back.
	t.Run("control", func(t *testing.T) {
		bin := filepath.Join(t.TempDir(), "anteroom")
		if err := testenv.BuildAnteroom(bin); err != nil {
			t.Fatal(err)
		}
		for _, tc := range cases {
			if found := runSoak(t, soakRun{length: 100 * time.Second, seed: 1, bin: bin, quiet: true,
				plan: func(int) plan { return tc.plan }}); found != nil {
				t.Fatalf("the fixed build, plan of %s:\n%s", tc.name, found.render(1))
			}
		}
	})
	for _, tc := range cases {
		t.Run(strings.SplitN(tc.name, ":", 2)[0], func(t *testing.T) {
			bin := buildPatched(t, filepath.Join("testdata", tc.patch))
			found := runSoak(t, soakRun{length: 3 * time.Minute, seed: 1, bin: bin, quiet: true,
				plan: func(int) plan { return tc.plan }})
			if found == nil {
				t.Fatalf("%s: the soak found nothing", tc.name)
			}
			for _, w := range tc.want {
				if strings.Contains(found.What, w) {
					t.Logf("%s: caught: %s", tc.name, found.What)
					return
				}
			}
			t.Fatalf("%s: the soak stopped on another violation than expected (%q):\n%s", tc.name, tc.want, found.render(1))
		})
	}
}

// buildPatched copies the module's tracked files into a temporary
// directory, applies patch there and builds anteroom from the copy.
func buildPatched(t *testing.T, patch string) string {
	t.Helper()
	abs, err := filepath.Abs(patch)
	if err != nil {
		t.Fatal(err)
	}
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	src := strings.TrimSpace(string(root))
	files, err := exec.Command("git", "-C", src, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dir := t.TempDir()
	for _, f := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			continue // deleted in the work tree
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "-C", dir, "apply", "--whitespace=nowarn", abs).CombinedOutput(); err != nil {
		t.Fatalf("%s does not apply (regenerate it, testdata/README.md): %v\n%s", patch, err, out)
	}
	bin := filepath.Join(dir, "anteroom-putback")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/anteroom")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build with %s: %v\n%s", patch, err, out)
	}
	return bin
}
