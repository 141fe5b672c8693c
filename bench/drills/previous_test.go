//go:build drills

package drills

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// previousRelease is the commit the rolling-upgrade drill builds as the
// previous release (N−1) unless ANTEROOM_DRILL_PREVIOUS names another
// commit. The repository has no release tags; this is the main the drill
// was written on (40ed026, "web: the sale configuration store's interface
// is declared once…"), the last main before issue 28's failover hold
// changes admission/enter.lua and admission/advance.lua — so once that
// work lands, N−1 and N differ in script versions, which is what the
// drill is for. Move it forward when a release is cut; set
// ANTEROOM_DRILL_PREVIOUS to try an older one (e.g. 21b9596, the last
// main with advance.lua v9).
const previousRelease = "40ed02686074691854391990681e3989cbbd103e"

// previous is the N−1 build: its commit, its source tree and its binary.
type previous struct {
	commit, src, bin string
}

// buildPrevious extracts the previous release's tree from this clone
// (git archive, so the clone's worktrees are left alone) into a temporary
// directory and builds cmd/anteroom there. A commit the clone lacks (a
// shallow clone) fails the test: the drill cannot run without N−1.
func buildPrevious(t *testing.T) previous {
	t.Helper()
	want := os.Getenv("ANTEROOM_DRILL_PREVIOUS")
	if want == "" {
		want = previousRelease
	}
	root, err := gitOut("", "rev-parse", "--show-toplevel")
	if err != nil {
		t.Fatalf("the rolling-upgrade drill builds N−1 from git and needs a git checkout: %v", err)
	}
	commit, err := gitOut(root, "rev-parse", "--verify", "--quiet", want+"^{commit}")
	if err != nil {
		t.Fatalf("the previous release %s is not in this clone (a shallow clone? run `git fetch --unshallow`, "+
			"or name a commit it has in ANTEROOM_DRILL_PREVIOUS): %v", want, err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	tarball := filepath.Join(dir, "src.tar")
	if _, err := gitOut(root, "archive", "--format=tar", "-o", tarball, commit); err != nil {
		t.Fatalf("git archive %s: %v", commit, err)
	}
	if out, err := exec.Command("tar", "-xf", tarball, "-C", src).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "anteroom-previous")
	build := exec.Command("go", "build", "-o", bin, "./cmd/anteroom")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the previous release %s: %v\n%s", commit[:7], err, out)
	}
	return previous{commit: commit, src: src, bin: bin}
}

func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
			return "", fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %v", args[0], err)
	}
	return strings.TrimSpace(string(out)), nil
}

// luaVersion is the first line of every script: "-- name.lua vN: ...".
var luaVersion = regexp.MustCompile(`^-- ([a-z_]+\.lua) v([0-9]+): `)

// script is one .lua file's version and the SHA1 of its text.
type script struct{ version, sha string }

// scriptVersions reads the version line and the text of every .lua file
// under root, by the script's name (names are unique; a script that moved
// between packages keeps its name and version).
func scriptVersions(root string) (map[string]script, error) {
	out := map[string]script{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".lua" {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha1.Sum(raw)
		first, _, _ := strings.Cut(string(raw), "\n")
		if m := luaVersion.FindStringSubmatch(first); m != nil {
			out[m[1]] = script{"v" + m[2], hex.EncodeToString(sum[:])}
		} else {
			out[filepath.Base(path)] = script{"unversioned", hex.EncodeToString(sum[:])} // the prelude
		}
		return nil
	})
	return out, err
}

// scriptChanges lists the scripts whose version differs between the
// trees before and after ("advance.lua v10 → v11"), and those
// only one of them has.
func scriptChanges(before, after string) (string, error) {
	a, err := scriptVersions(before)
	if err != nil {
		return "", err
	}
	b, err := scriptVersions(after)
	if err != nil {
		return "", err
	}
	var diff []string
	for p, v := range b {
		switch old, ok := a[p]; {
		case !ok:
			diff = append(diff, p+" new in N ("+v.version+")")
		case old.version != v.version:
			diff = append(diff, p+" "+old.version+" → "+v.version)
		case old.sha != v.sha:
			diff = append(diff, p+" "+v.version+" changed without a new version")
		}
	}
	for p, v := range a {
		if _, ok := b[p]; !ok {
			diff = append(diff, p+" gone in N (was "+v.version+")")
		}
	}
	slices.Sort(diff)
	if len(diff) == 0 {
		return fmt.Sprintf("none: N−1 and N run the same text of all %d scripts", len(b)), nil
	}
	return strings.Join(diff, ", "), nil
}
