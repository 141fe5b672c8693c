//go:build drills

// Package drills holds anteroom's fault drills: whole sales on real
// redis-server and NATS JetStream servers (internal/testenv), each with one
// fault injected mid-sale, a recovery, and a verdict computed from the real
// state afterwards — no unit oversold (counted from the order stream and
// from Redis), no acknowledged claim lost (every claim id a client was
// answered 201 or 200 for is on the stream), per-user limits held.
//
// The drills are Go tests behind the build tag "drills", so CI never
// compiles them:
//
//	go test -tags drills -v -count=1 -timeout 30m ./bench/drills
//
// Each drill prints "DRILL <name>: PASS" or "FAIL" with its figures and
// appends a row to the JSON-lines file named by ANTEROOM_DRILLS_OUT (a
// temporary file when unset). After the run, TestMain renders the latest
// row of every drill in that file to bench/DRILLS.md (ANTEROOM_DRILLS_MD
// names another file; "off" renders nothing). Set ANTEROOM_DRILLS_OUT to
// a kept file to accumulate rows over partial runs (-run).
//
// The rolling-upgrade drill also builds the previous release from this
// clone's history: ANTEROOM_DRILL_PREVIOUS names its commit (default
// previousRelease); a clone without it fails that drill.
package drills

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) {
	os.Exit(runDrills(m))
}

// runDrills runs the tests, then renders the results; it returns the exit
// code.
func runDrills(m *testing.M) int {
	out := os.Getenv("ANTEROOM_DRILLS_OUT")
	tmp := ""
	if out == "" {
		dir, err := os.MkdirTemp("", "anteroom-drills-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "drills:", err)
			return 1
		}
		tmp = dir
		out = filepath.Join(dir, "rows.jsonl")
	}
	results = &resultFile{path: out}
	// go-redis logs every failed dial of the in-process nodes to stderr;
	// the nodes' own logs (in each drill's directory) carry the errors.
	redis.SetLogger(quiet{})
	start := time.Now()
	code := m.Run()
	elapsed := time.Since(start)
	md := os.Getenv("ANTEROOM_DRILLS_MD")
	if md == "" {
		md = filepath.Join("..", "DRILLS.md")
	}
	if md != "off" {
		if err := renderMarkdown(out, md, elapsed); err != nil {
			fmt.Fprintln(os.Stderr, "drills: render:", err)
			if code == 0 {
				code = 1
			}
		} else {
			fmt.Printf("drills: %s written from %s (run took %s)\n", md, out, elapsed.Round(time.Second))
		}
	}
	cleanBinary()
	if tmp != "" {
		_ = os.RemoveAll(tmp)
	}
	return code
}

// quiet drops go-redis's internal log lines.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
