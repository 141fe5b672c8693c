package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/crowd"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/nats-io/nats.go/jetstream"
)

func demo(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "HTTP listen address (falls back to a free port when taken)")
	users := fs.Int("users", 20000, "simulated shoppers")
	units := fs.Int64("units", 500, "units for sale")
	abandon := fs.Float64("abandon", 0.1, "share of shoppers who leave after joining")
	rate := fs.Float64("rate", 2000, "admissions per second")
	keep := fs.Bool("keep", false, "keep serving after the report, until interrupted")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "anteroom-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// -keep opens the console by a one-time link (console_link.go): the
	// only node that serves such links is the demo's, and only then.
	cfg := node.Config{Addr: *addr, DataDir: dir, Log: newLogger(stderr, "text", slog.LevelWarn), DemoSignInLinks: *keep}
	n, err := node.Start(ctx, cfg)
	if err != nil && *addr != "127.0.0.1:0" {
		fmt.Fprintf(stderr, "demo: %v; trying a free port\n", err)
		cfg.Addr = "127.0.0.1:0"
		n, err = node.Start(ctx, cfg)
	}
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.Close(sctx)
	}()

	ev := fmt.Sprintf("demo-%d", time.Now().Unix())
	now := time.Now().UTC().Truncate(time.Second)
	sale := map[string]any{
		"name": "anteroom demo sale", "supply": *units, "per_user_limit": 1,
		"prequeue_opens_at": now.Add(3 * time.Second), "starts_at": now.Add(5 * time.Second),
		"ends_at": now.Add(10 * time.Minute), "mode": "fcfs", "random_window_seconds": 2,
		"admit_rate_per_second": *rate, "buckets": 1,
		// The simulated crowd is 20,000 shoppers from one loopback address:
		// the per-IP join budget (on by default where visitors are
		// anonymous) would refuse all but a few of them. A real sale keeps it.
		"limits": map[string]any{"join": map[string]any{"ip": map[string]any{"per_second": -1}}},
	}
	if err := putEvent(ctx, n.URL(), n.AdminToken, ev, sale); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "anteroom demo — embedded Redis and NATS (not durable)\n")
	fmt.Fprintf(stdout, "  sale %q: %d units, %d shoppers, %.0f%% abandoning, %.0f admissions/s\n", ev, *units, *users, *abandon*100, *rate)
	fmt.Fprintf(stdout, "  waiting room: %s/e/%s\n", n.URL(), ev)
	fmt.Fprintf(stdout, "  queue opens in 3 s, sale starts in 5 s, first 2 s of arrivals shuffled\n")
	if *keep {
		if err := openConsole(ctx, n, ev); err != nil {
			return err
		}
		if err := printConsoleLink(ctx, stdout, n, ev); err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout)

	cctx, cancel := context.WithTimeout(ctx, 50*time.Second)
	defer cancel()
	res, err := crowd.Run(cctx, crowd.Config{
		URLs: []string{n.URL()}, Event: ev, Users: *users, Abandon: *abandon,
		ArrivalSpread: 6 * time.Second, Concurrency: 128,
		Replays: 3, ReplayShare: 0.05,
		Progress: func(s crowd.Stats) { progress(stdout, s, *units) },
	})
	fmt.Fprintln(stdout)
	if err != nil {
		return fmt.Errorf("crowd: %w", err)
	}
	printEndpoints(stdout, res)
	rep, err := reconcileWith(ctx, n.Claims, n.JS, claim.Sale{ID: ev, Buckets: 1}, *units, res)
	if err != nil {
		return err
	}
	rep.print(stdout)
	if *keep {
		fmt.Fprintf(stdout, "\nstill serving %s/e/%s — Ctrl-C to stop\n", n.URL(), ev)
		// A fresh link: the first may be spent or expired by now.
		if err := printConsoleLink(ctx, stdout, n, ev); err != nil {
			return err
		}
		<-ctx.Done()
	}
	if !rep.balanced() {
		return fmt.Errorf("the report does not balance")
	}
	return nil
}

func putEvent(ctx context.Context, base, token, id string, body map[string]any) error {
	if err := adminCall(ctx, base, token, http.MethodPut, "/admin/events/"+id, body); err != nil {
		return fmt.Errorf("create event: %w", err)
	}
	return nil
}

// adminCall sends body as JSON to the admin API at base+path with the
// bearer token; any answer but a 2xx is an error showing it.
func adminCall(ctx context.Context, base, token, method, path string, body map[string]any) error {
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return nil
}

func progress(w io.Writer, s crowd.Stats, units int64) {
	const width = 30
	frac := float64(s.Done) / float64(max(s.Users, 1))
	bar := strings.Repeat("█", int(frac*width)) + strings.Repeat("░", width-int(frac*width))
	fmt.Fprintf(w, "\r  %s %3.0f%%  joined %6d  admitted %5d  granted %4d/%d  sold-out %6d  left %5d ",
		bar, frac*100, s.Joined, s.Admitted, s.Granted, units, s.SoldOut, s.Abandoned)
}

// report is the demo's reconciliation of what the crowd saw against Redis
// and the order stream.
type report struct {
	units                                   int64
	joined, admitted, granted, redisGranted int64
	streamMsgs, streamDistinct              int
	remaining, outbox, overLimit, oversold  int64
	mismatch, errors                        int64
	firstErrors                             []string
	elapsed                                 time.Duration
}

// totals is what a reconciliation reads from Redis.
type totals interface {
	Totals(ctx context.Context, sale claim.Sale) (claim.Totals, error)
}

// reconcileWith checks what the crowd saw of sale against Redis and the
// stream.
func reconcileWith(ctx context.Context, store totals, js jetstream.JetStream, sale claim.Sale, units int64, res crowd.Result) (report, error) {
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	r := report{units: units, joined: res.Joined, admitted: res.Admitted, granted: res.Granted,
		mismatch: res.ReplayMismatch, errors: res.Errors, firstErrors: res.FirstErrors, elapsed: res.Elapsed}
	// The outbox bookkeeping trails acknowledgements by a few milliseconds.
	var t claim.Totals
	var err error
	for range 50 {
		if t, err = store.Totals(rctx, sale); err != nil {
			return r, err
		}
		if t.Outbox == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.redisGranted, r.remaining, r.outbox = t.Granted, t.Remaining, t.Outbox
	if r.streamMsgs, r.streamDistinct, err = claim.CountGranted(rctx, js, sale.ID); err != nil {
		return r, err
	}
	for _, ids := range res.Claims {
		if len(ids) > 1 {
			r.overLimit++
		}
	}
	r.oversold = max(r.redisGranted-units, 0)
	return r, nil
}

func (r report) balanced() bool {
	return r.oversold == 0 && r.overLimit == 0 && r.mismatch == 0 && r.errors == 0 &&
		r.redisGranted == r.granted && int64(r.streamMsgs) == r.redisGranted && int64(r.streamDistinct) == r.redisGranted &&
		r.redisGranted+r.remaining == r.units && r.outbox == 0
}

func (r report) print(w io.Writer) {
	verdict := "BALANCED"
	if !r.balanced() {
		verdict = "DOES NOT BALANCE"
	}
	fmt.Fprintf(w, "\nreconciliation (%s)\n", r.elapsed.Round(100*time.Millisecond))
	fmt.Fprintf(w, "  joined                      %8d\n", r.joined)
	fmt.Fprintf(w, "  admitted                    %8d\n", r.admitted)
	fmt.Fprintf(w, "  granted (answered 201/200)  %8d\n", r.granted)
	fmt.Fprintf(w, "  granted (Redis)             %8d\n", r.redisGranted)
	fmt.Fprintf(w, "  order events on JetStream   %8d  (%d distinct claim ids)\n", r.streamMsgs, r.streamDistinct)
	fmt.Fprintf(w, "  units remaining             %8d  of %d\n", r.remaining, r.units)
	fmt.Fprintf(w, "  outbox not yet published    %8d\n", r.outbox)
	fmt.Fprintf(w, "  users above their limit     %8d\n", r.overLimit)
	fmt.Fprintf(w, "  replays naming another claim%8d\n", r.mismatch)
	fmt.Fprintf(w, "  client errors               %8d\n", r.errors)
	fmt.Fprintf(w, "  oversold                    %8d\n", r.oversold)
	for _, e := range r.firstErrors {
		fmt.Fprintf(w, "    error: %s\n", e)
	}
	fmt.Fprintf(w, "  %s\n", verdict)
}
