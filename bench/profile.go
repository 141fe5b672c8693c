package main

import (
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

// parts names the node's work on a claim, each by the functions on a
// sample's stack; a sample goes to the first part that matches. The NATS
// client's read loop parses every inbound message — PubAcks and the
// marker view's deliveries alike — so it counts under "publish + ack".
var parts = []struct {
	name string
	re   *regexp.Regexp
}{
	{"fence (marker view, stream reads)", regexp.MustCompile(`claim\.\(\*markerView\)|claim\.\(\*markerLanes\)|claim\.firstMarkerAfter|claim\.followView|jetstream\.\(\*orderedConsumer\)|jetstream\.\(\*orderedSubscription\)|jetstream\.\(\*stream\)\.GetMsg|jetstream\.\(\*stream\)\.GetLastMsgForSubject`)},
	{"order worker", regexp.MustCompile(`claim\.\(\*Worker\)`)},
	{"signature", regexp.MustCompile(`ed25519|anteroom/tokens\.`)},
	{"script (Redis client)", regexp.MustCompile(`redis/go-redis`)},
	{"publish + ack", regexp.MustCompile(`claim\.\(\*Publisher\)|nats-io/nats\.go`)},
	{"HTTP", regexp.MustCompile(`valyala/fasthttp|gofiber/fiber`)},
	{"GC", regexp.MustCompile(`runtime\.gcBgMarkWorker|runtime\.bgsweep|runtime\.gcDrain|runtime\.mallocgc`)},
	{"scheduler", regexp.MustCompile(`runtime\.schedule|runtime\.findRunnable|runtime\.mcall|runtime\.park_m|runtime\.netpoll`)},
}

var traceValue = regexp.MustCompile(`^\s*([0-9.]+)(ns|us|µs|ms|s)\s+(\S+)`)

// attribute reads the CPU profile at path (of binary bin) with go tool
// pprof -traces and returns each part's share of the samples, "other"
// last.
func attribute(bin, path string) ([]part, error) {
	out, err := exec.Command("go", "tool", "pprof", "-traces", bin, path).Output()
	if err != nil {
		return nil, fmt.Errorf("go tool pprof -traces: %w", err)
	}
	sums := make([]float64, len(parts)+1)
	var total float64
	flush := func(v float64, stack []string) {
		if v == 0 {
			return
		}
		total += v
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
	for _, line := range strings.Split(string(out), "\n") {
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
		return nil, fmt.Errorf("no samples in %s", path)
	}
	out2 := make([]part, 0, len(parts)+1)
	for i, p := range parts {
		out2 = append(out2, part{p.name, sums[i] / total})
	}
	return append(out2, part{"other", sums[len(parts)] / total}), nil
}
