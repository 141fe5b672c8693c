//go:build drills

package drills

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anteroom/anteroom/client"
	anteroomcrowd "github.com/anteroom/anteroom/internal/crowd"
)

// answer is one HTTP exchange's outcome, as client/'s decoders read it
// (internal/crowd.Exchange).
type answer struct {
	status int
	code   string // problem+json code
	reply  anteroomcrowd.Answer
	err    error // transport error: no answer
}

// kind names an outcome for the tally: "201", "503 degraded", "timeout",
// "refused", ...
func (a answer) kind() string {
	if a.err != nil {
		var ne net.Error
		switch {
		case errors.As(a.err, &ne) && ne.Timeout():
			return "timeout"
		case errors.Is(a.err, io.EOF) || errors.Is(a.err, io.ErrUnexpectedEOF):
			return "connection closed"
		default:
			return "connection refused/reset"
		}
	}
	if a.code != "" {
		return strconv.Itoa(a.status) + " " + a.code
	}
	return strconv.Itoa(a.status)
}

// send sends one call of user to the node at base through client/ (a
// client.Client naming the user by X-User-ID, as the shop's gateway does,
// that sends each call once: the drill's loops send again by drillRetry,
// so every answer is tallied) within timeout. f makes the call and
// returns the 2xx status it stands for; its typed result is f's to keep.
func (c *crowd) send(ctx context.Context, timeout time.Duration, user, base string, f func(context.Context, *client.Client) (int, error)) answer {
	cl, err := client.New(base, client.WithHTTPClient(c.client), client.WithUser(client.DefaultUserHeader, user), client.WithRetry(client.Retry{Attempts: 1}))
	if err != nil {
		return answer{err: err, reply: anteroomcrowd.Answer{Err: err}}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	status, err := f(ctx, cl)
	var refusal *client.Error
	switch {
	case err == nil:
		return answer{status: status, reply: anteroomcrowd.Answer{Status: status}}
	case errors.As(err, &refusal):
		return answer{status: refusal.Status, code: string(refusal.Code), reply: anteroomcrowd.Answer{
			Status: refusal.Status, Code: string(refusal.Code), RetryAfter: refusal.RetryAfter, HasRetryAfter: refusal.RetryAfter > 0}}
	}
	return answer{err: err, reply: anteroomcrowd.Answer{Err: err}}
}

// do sends one bodiless request as it is (for the calls client/ has no
// method for: a lookup of one claim) and reads the answer with client/'s
// decoders.
func (c *crowd) do(ctx context.Context, timeout time.Duration, method, url string, hdr map[string]string) answer {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	a := anteroomcrowd.Exchange(ctx, c.client, method, url, hdr)
	if a.Err != nil {
		return answer{err: a.Err, reply: a}
	}
	return answer{status: a.Status, code: a.Code, reply: a}
}

func (c *crowd) tally(what string, a answer) {
	c.mu.Lock()
	c.outcomes[what+" "+a.kind()]++
	c.mu.Unlock()
}

func (c *crowd) fail(format string, a ...any) {
	c.gaveUp.Add(1)
	c.mu.Lock()
	if len(c.firstErrs) < 8 {
		c.firstErrs = append(c.firstErrs, fmt.Sprintf(format, a...))
	}
	c.mu.Unlock()
}

// drillRetry is client/'s retry rules as a drill shopper follows them:
// sent again for as long as the crowd runs (a drill counts every answer
// until each claim has a final one), no sooner than Retry-After, and
// after no answer after at most 10 s (the doubling wait's cap: a drill
// must move on).
var drillRetry = client.Retry{Attempts: math.MaxInt32, MaxWait: 10 * time.Second}

// backoff waits after the nth sending of a call came to a, as drillRetry
// says (every drill call may be sent again: joins and claims name their
// user, claims carry their Idempotency-Key), and reports whether to send
// it again; false for a final answer or when ctx ends.
func backoff(ctx context.Context, n int, a answer) bool {
	return anteroomcrowd.Backoff(ctx, drillRetry, n, a.reply, true)
}

func (c *crowd) acked(a ack) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acks = append(c.acks, a)
	k := a.User + "/" + a.Key
	if first, ok := c.byKey[k]; !ok {
		c.byKey[k] = a.ClaimID
	} else if first != a.ClaimID {
		c.mismatch++
	}
}

// snapshot returns the acknowledged claims so far.
func (c *crowd) snapshot() []ack {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.acks)
}

// claimOutcomes returns the tally of claim answers, "201" → n, ...
func (c *crowd) claimOutcomes() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, n := range c.outcomes {
		if rest, ok := strings.CutPrefix(k, "claim "); ok {
			out[rest] += n
		}
	}
	return out
}

// outcomesLine renders a tally, largest first.
func outcomesLine(m map[string]int) string {
	type kv struct {
		k string
		n int
	}
	var all []kv
	for k, n := range m {
		all = append(all, kv{k, n})
	}
	slices.SortFunc(all, func(a, b kv) int {
		if a.n != b.n {
			return b.n - a.n
		}
		if a.k < b.k {
			return -1
		}
		return 1
	})
	s := ""
	for i, e := range all {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s: %d", e.k, e.n)
	}
	if s == "" {
		return "none"
	}
	return s
}

// refusals counts the claim answers that refused honestly (503 with
// Retry-After, 429), the client timeouts and connection failures, and the
// dishonest answers (500 and other unexpected codes).
func refusals(m map[string]int) (honest, timeouts, unreachable, dishonest int) {
	for k, n := range m {
		switch {
		case strings.HasPrefix(k, "503") || strings.HasPrefix(k, "429"):
			honest += n
		case k == "timeout":
			timeouts += n
		case strings.HasPrefix(k, "connection"):
			unreachable += n
		case strings.HasPrefix(k, "5"):
			dishonest += n
		}
	}
	return
}
