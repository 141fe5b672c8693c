// Package profparts attributes a node's CPU profile to the parts of its
// work — HTTP, the join script's round trip, tickets, cookies, GC … — and
// to the kinds of request it served, from the functions on each sample's
// stack (go tool pprof -traces). The benchmark harness (go run ./bench)
// and the flash crowd (anteroom loadgen -scenario flash -profile) report
// the same breakdown.
package profparts

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Rule names one part by the functions on a sample's stack.
type Rule struct {
	Name string
	Re   *regexp.Regexp
}

// Share is one part's share of a profile's samples.
type Share struct {
	Name  string
	Share float64
}

// Claim names the node's work on a claim; a sample goes to the first rule
// that matches any of its frames (Shares with innermost false). The NATS
// client's read loop parses every inbound message — PubAcks and the
// marker view's deliveries alike — so it counts under "publish + ack".
var Claim = []Rule{
	{"fence (marker view, stream reads)", regexp.MustCompile(`claim\.\(\*markerView\)|claim\.\(\*markerLanes\)|claim\.firstMarkerAfter|claim\.followView|jetstream\.\(\*orderedConsumer\)|jetstream\.\(\*orderedSubscription\)|jetstream\.\(\*stream\)\.GetMsg|jetstream\.\(\*stream\)\.GetLastMsgForSubject`)},
	{"order worker", regexp.MustCompile(`claim\.\(\*Worker\)`)},
	{"signature", regexp.MustCompile(`ed25519|anteroom/tokens\.`)},
	{"script (Redis client)", regexp.MustCompile(`redis/go-redis`)},
	{"publish + ack", regexp.MustCompile(`claim\.\(\*Publisher\)|nats-io/nats\.go`)},
	{"HTTP", regexp.MustCompile(`valyala/fasthttp|gofiber/fiber`)},
	{"GC", regexp.MustCompile(`runtime\.gcBgMarkWorker|runtime\.bgsweep|runtime\.gcDrain|runtime\.mallocgc`)},
	{"scheduler", regexp.MustCompile(`runtime\.schedule|runtime\.findRunnable|runtime\.mcall|runtime\.park_m|runtime\.netpoll`)},
}

// Request names the node's work on joins and status polls (issue 37:
// HTTP, ticket, script round trip, JSON, cookies, GC, scheduler). A sample
// goes to the part of its innermost frame that a rule names (Shares with
// innermost true): a write(2) under go-redis under package queue is the
// join script's, under fasthttp the HTTP answer's; an allocation counts
// in the part that made it, and "GC" is the collector's own work and its
// assists. Frames that only pass a call on (the Redis client's metrics
// hook) name no part.
var Request = []Rule{
	{"rate limits (package limit, its Redis calls)", regexp.MustCompile(`anteroom/limit\.`)},
	{"join script (package queue, its Redis calls)", regexp.MustCompile(`anteroom/queue\.`)},
	{"tickets and tokens (package tokens)", regexp.MustCompile(`anteroom/tokens\.|crypto/ed25519|curve25519`)},
	{"door", regexp.MustCompile(`anteroom/door`)},
	{"metrics and tracing", regexp.MustCompile(`prometheus|opentelemetry|anteroom/metrics\.`)},
	{"cookies", regexp.MustCompile(`Cookie`)},
	{"JSON", regexp.MustCompile(`encoding/json|anteroom/web/kit\.SendJSON|anteroom/web/shopper\.append`)},
	{"defences and identity (web/protect)", regexp.MustCompile(`anteroom/web/protect\.`)},
	{"claims (package claim, NATS)", regexp.MustCompile(`anteroom/claim\.|nats-io`)},
	{"background (ticks, views)", regexp.MustCompile(`anteroom/sale\.|anteroom/internal/node\.|anteroom/health\.|anteroom/lifecycle\.\(\*[A-Za-z]+\)\.Run`)},
	{"anteroom's handlers and middleware (the rest)", regexp.MustCompile(`github\.com/anteroom/`)},
	{"HTTP (fasthttp, fiber, syscalls)", regexp.MustCompile(`valyala/fasthttp|gofiber/fiber`)},
	{"GC", regexp.MustCompile(`runtime\.gcBgMarkWorker|runtime\.bgsweep|runtime\.gcDrain|runtime\.bgscavenge`)},
	{"scheduler", regexp.MustCompile(`runtime\.schedule|runtime\.findRunnable|runtime\.mcall|runtime\.park_m|runtime\.netpoll`)},
}

// Kind names the request a sample served by the shopper handler on its
// stack (Shares with innermost false). The middleware every request
// passes (metrics, request ids, the entry cap) names no route on its
// own stack frames, and the HTTP work around a handler (reading the
// request, writing the answer) none at all: they count apart.
var Kind = []Rule{
	{"join", regexp.MustCompile(`shopper\.\(\*API\)\.join\b|shopper\.\(\*API\)\.enqueue`)},
	{"status", regexp.MustCompile(`shopper\.\(\*API\)\.status\b`)},
	{"claim", regexp.MustCompile(`shopper\.\(\*API\)\.claim\b|anteroom/claim\.\(\*Service\)`)},
	{"middleware and other requests", regexp.MustCompile(`gofiber/fiber/v2\.\(\*App\)\.handler`)},
	{"HTTP outside a handler", regexp.MustCompile(`valyala/fasthttp`)},
	{"background, GC, scheduler", regexp.MustCompile(`.`)},
}

// passThrough names the frames that name no part when a sample goes to
// its innermost named frame.
var passThrough = regexp.MustCompile(`anteroom/metrics\.\(\*redisHook\)`)

// Fetch saves to path the CPU profile over d of the node serving its
// profiles at addr (ANTEROOM_PPROF_ADDR): whole seconds, at least one.
func Fetch(ctx context.Context, addr string, d time.Duration, path string) error {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, max(int(d.Seconds()), 1))
	ctx, cancel := context.WithTimeout(ctx, d+time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile: %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Traces is the profile at path, of binary bin, as go tool pprof -traces
// prints it.
func Traces(bin, path string) (string, error) {
	out, err := exec.Command("go", "tool", "pprof", "-traces", bin, path).Output()
	if err != nil {
		return "", fmt.Errorf("go tool pprof -traces: %w", err)
	}
	return string(out), nil
}

var traceValue = regexp.MustCompile(`^\s*([0-9.]+)(ns|us|µs|ms|s)\s+(\S+)`)

// Shares is each rule's share of the samples in traces (Traces' text),
// "other" last; nil when it has no samples. With innermost, a sample goes
// to the rule naming its innermost frame (pprof lists a stack from its
// leaf); without, to the first rule that matches any of its frames.
func Shares(traces string, rules []Rule, innermost bool) []Share {
	sums := make([]float64, len(rules)+1)
	var total float64
	owner := func(stack []string) int {
		if innermost {
			for _, frame := range stack {
				if passThrough.MatchString(frame) {
					continue
				}
				for i, r := range rules {
					if r.Re.MatchString(frame) {
						return i
					}
				}
			}
			return len(rules)
		}
		joined := strings.Join(stack, "\n")
		for i, r := range rules {
			if r.Re.MatchString(joined) {
				return i
			}
		}
		return len(rules)
	}
	var v float64
	var stack []string
	flush := func() {
		if v > 0 {
			total += v
			sums[owner(stack)] += v
		}
		v, stack = 0, nil
	}
	for _, line := range strings.Split(traces, "\n") {
		if strings.HasPrefix(line, "-----") {
			flush()
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
	flush()
	if total == 0 {
		return nil
	}
	out := make([]Share, 0, len(rules)+1)
	for i, r := range rules {
		out = append(out, Share{r.Name, sums[i] / total})
	}
	return append(out, Share{"other", sums[len(rules)] / total})
}

// Attribute reads the profile at path, of binary bin, and returns Shares
// of it by rules.
func Attribute(bin, path string, rules []Rule, innermost bool) ([]Share, error) {
	traces, err := Traces(bin, path)
	if err != nil {
		return nil, err
	}
	s := Shares(traces, rules, innermost)
	if s == nil {
		return nil, fmt.Errorf("no samples in %s", path)
	}
	return s, nil
}

// Format is shares as one line: each part's name, its share of perUnit
// (a CPU time per request, in µs) when perUnit > 0, and its percentage.
func Format(shares []Share, perUnit float64) string {
	var b strings.Builder
	for i, s := range shares {
		if i > 0 {
			b.WriteString(", ")
		}
		if perUnit > 0 {
			fmt.Fprintf(&b, "%s %.1f µs (%.0f%%)", s.Name, perUnit*s.Share, 100*s.Share)
		} else {
			fmt.Fprintf(&b, "%s %.0f%%", s.Name, 100*s.Share)
		}
	}
	return b.String()
}
