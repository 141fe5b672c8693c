package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// profileDir is -profiles: where the node's CPU profiles are kept.
var profileDir string

// keepProfile copies the profile at path, of binary bin, to profileDir
// (when set) as name.pprof (name-2.pprof, … for a later step's), with
// the binary beside it.
func keepProfile(bin, path, name string) error {
	if profileDir == "" {
		return nil
	}
	if err := os.MkdirAll(profileDir, 0o755); err != nil {
		return err
	}
	file := name + ".pprof"
	for i := 2; ; i++ {
		if _, err := os.Stat(filepath.Join(profileDir, file)); err != nil {
			break
		}
		file = fmt.Sprintf("%s-%d.pprof", name, i)
	}
	for from, to := range map[string]string{path: file, bin: filepath.Base(bin)} {
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(profileDir, to), b, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// fetchProfile saves the CPU profile at url (a node's /debug/pprof/profile)
// to path.
func fetchProfile(url, path string) error {
	c := &http.Client{Timeout: 2 * time.Minute}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// part is a share of the node's CPU samples.
type part struct {
	name  string
	share float64
}

// partRule names one part of the node's work by the functions on a
// sample's stack.
type partRule struct {
	name string
	re   *regexp.Regexp
}

// claimParts names the node's work on a claim; a sample goes to the
// first part that matches. The NATS client's read loop parses every
// inbound message — PubAcks and the marker view's deliveries alike — so
// it counts under "publish + ack".
var claimParts = []partRule{
	{"fence (marker view, stream reads)", regexp.MustCompile(`claim\.\(\*markerView\)|claim\.\(\*markerLanes\)|claim\.firstMarkerAfter|claim\.followView|jetstream\.\(\*orderedConsumer\)|jetstream\.\(\*orderedSubscription\)|jetstream\.\(\*stream\)\.GetMsg|jetstream\.\(\*stream\)\.GetLastMsgForSubject`)},
	{"order worker", regexp.MustCompile(`claim\.\(\*Worker\)`)},
	{"signature", regexp.MustCompile(`ed25519|anteroom/tokens\.`)},
	{"script (Redis client)", regexp.MustCompile(`redis/go-redis`)},
	{"publish + ack", regexp.MustCompile(`claim\.\(\*Publisher\)|nats-io/nats\.go`)},
	{"HTTP", regexp.MustCompile(`valyala/fasthttp|gofiber/fiber`)},
	{"GC", regexp.MustCompile(`runtime\.gcBgMarkWorker|runtime\.bgsweep|runtime\.gcDrain|runtime\.mallocgc`)},
	{"scheduler", regexp.MustCompile(`runtime\.schedule|runtime\.findRunnable|runtime\.mcall|runtime\.park_m|runtime\.netpoll`)},
}

// requestParts names the node's work on a join and a status poll (issue
// 37: HTTP, ticket, script round trip, JSON, cookies, GC, scheduler). A
// sample goes to the part of its innermost frame that a rule names
// (innermostFirst): a write(2) under go-redis under package queue is the
// join script's, under fasthttp the HTTP answer's; an allocation counts
// in the part that made it, and "GC" is the collector's own work and
// its assists. Frames that only pass a call on (the Redis client's
// metrics hook) name no part.
var requestParts = []partRule{
	{"rate limits (package limit, its Redis calls)", regexp.MustCompile(`anteroom/limit\.`)},
	{"join script (package queue, its Redis calls)", regexp.MustCompile(`anteroom/queue\.`)},
	{"tickets and tokens (package tokens)", regexp.MustCompile(`anteroom/tokens\.|crypto/ed25519|curve25519`)},
	{"door", regexp.MustCompile(`anteroom/door`)},
	{"metrics and tracing", regexp.MustCompile(`prometheus|opentelemetry|anteroom/metrics\.`)},
	{"cookies", regexp.MustCompile(`Cookie`)},
	{"JSON", regexp.MustCompile(`encoding/json|anteroom/web/kit\.SendJSON|anteroom/web/shopper\.append`)},
	{"defences and identity (web/protect)", regexp.MustCompile(`anteroom/web/protect\.`)},
	{"background (ticks, views, NATS)", regexp.MustCompile(`anteroom/sale\.|anteroom/internal/node\.|anteroom/health\.|nats-io`)},
	{"anteroom's handlers and middleware (the rest)", regexp.MustCompile(`github\.com/anteroom/`)},
	{"HTTP (fasthttp, fiber, syscalls)", regexp.MustCompile(`valyala/fasthttp|gofiber/fiber`)},
	{"GC", regexp.MustCompile(`runtime\.gcBgMarkWorker|runtime\.bgsweep|runtime\.gcDrain|runtime\.bgscavenge`)},
	{"scheduler", regexp.MustCompile(`runtime\.schedule|runtime\.findRunnable|runtime\.mcall|runtime\.park_m|runtime\.netpoll`)},
}

// passThrough names the frames that name no part of requestParts.
var passThrough = regexp.MustCompile(`anteroom/metrics\.\(\*redisHook\)`)

var traceValue = regexp.MustCompile(`^\s*([0-9.]+)(ns|us|µs|ms|s)\s+(\S+)`)

// attribute reads the CPU profile at path (of binary bin) with go tool
// pprof -traces and returns each of parts' share of the samples, "other"
// last.
func attribute(bin, path string, parts []partRule) ([]part, error) {
	return attributeBy(bin, path, parts, false)
}

// attributeInnermost is attribute with a sample going to the part of
// its innermost frame that a rule names (frames passThrough matches
// skipped), not to the first rule that matches any of its frames.
func attributeInnermost(bin, path string, parts []partRule) ([]part, error) {
	return attributeBy(bin, path, parts, true)
}

func attributeBy(bin, path string, parts []partRule, innermost bool) ([]part, error) {
	out, err := exec.Command("go", "tool", "pprof", "-traces", bin, path).Output()
	if err != nil {
		return nil, fmt.Errorf("go tool pprof -traces: %w", err)
	}
	shares := sharesOf(string(out), parts, innermost)
	if shares == nil {
		return nil, fmt.Errorf("no samples in %s", path)
	}
	return shares, nil
}

// sharesOf is each of parts' share of the samples in traces (go tool
// pprof -traces' output), "other" last; nil when it has no samples.
func sharesOf(traces string, parts []partRule, innermost bool) []part {
	sums := make([]float64, len(parts)+1)
	var total float64
	flush := func(v float64, stack []string) {
		if v == 0 {
			return
		}
		total += v
		if innermost { // pprof -traces lists a stack from its leaf
			for _, frame := range stack {
				if passThrough.MatchString(frame) {
					continue
				}
				for i, p := range parts {
					if p.re.MatchString(frame) {
						sums[i] += v
						return
					}
				}
			}
			sums[len(parts)] += v
			return
		}
		joined := strings.Join(stack, "\n")
		for i, p := range parts {
			if p.re.MatchString(joined) {
				sums[i] += v
				return
			}
		}
		sums[len(parts)] += v
	}
	var v float64
	var stack []string
	for _, line := range strings.Split(traces, "\n") {
		if strings.HasPrefix(line, "-----") {
			flush(v, stack)
			v, stack = 0, nil
			continue
		}
		if m := traceValue.FindStringSubmatch(line); m != nil && v == 0 {
			f, _ := strconv.ParseFloat(m[1], 64)
			switch m[2] {
			case "s":
				f *= 1e9
			case "ms":
				f *= 1e6
			case "us", "µs":
				f *= 1e3
			}
			v, stack = f, []string{m[3]}
			continue
		}
		if v != 0 {
			if f := strings.TrimSpace(line); f != "" {
				stack = append(stack, f)
			}
		}
	}
	flush(v, stack)
	if total == 0 {
		return nil
	}
	out := make([]part, 0, len(parts)+1)
	for i, p := range parts {
		out = append(out, part{p.name, sums[i] / total})
	}
	return append(out, part{"other", sums[len(parts)] / total})
}
