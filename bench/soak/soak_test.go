//go:build soak && linux

// Package soak runs anteroom for a long while under random faults and
// checks its promises all along (issue 19). On loopback: a Redis primary
// with a replica (each node reaches Redis through its own TCP proxy, which
// a failover retargets and which can delay or cut the link), a three-server
// NATS cluster with the order stream on three replicas, three `anteroom
// serve` processes and `anteroom worker`; a crowd joins, polls, claims
// (with retries, twins and replays), looks up and releases claims, and
// abandons; a seeded scheduler injects faults (faults_test.go); the history
// (history_test.go) records every answer and checks the promises as they
// come, a sampler checks Redis and the admission frontier every second, and
// every sale is audited against the order stream when it ends
// (audit_test.go). The first violation stops the run and prints the seed
// and the history around it.
//
//	go test -tags soak -run TestSoak -v -timeout 30m ./bench/soak
//
// ANTEROOM_SOAK_DURATION sets the length (default 10m), ANTEROOM_SOAK_SEED
// the seed (default: from the clock, printed), ANTEROOM_SOAK_REDIS=cluster
// runs on a three-master Redis Cluster instead (no replicas, so no
// failover; its clients follow the nodes' own addresses, so no link
// faults). The seed fixes the fault
// schedule and the shoppers' plans; goroutine timing is the machine's, so
// a replay draws the same faults at the same moments, not the same
// interleaving.
package soak

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/wait"
	"github.com/anteroom/anteroom/tokens"
	"github.com/redis/go-redis/v9"
)

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestSoak(t *testing.T) {
	length := 10 * time.Minute
	if v := os.Getenv("ANTEROOM_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("ANTEROOM_SOAK_DURATION: %v", err)
		}
		length = d
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("ANTEROOM_SOAK_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("ANTEROOM_SOAK_SEED: %v", err)
		}
		seed = s
	}
	// ANTEROOM_SOAK_FAULTS=off runs the crowd without faults (to tell a
	// fault's finding from the crowd's).
	found := runSoak(t, soakRun{length: length, seed: seed, onCluster: os.Getenv("ANTEROOM_SOAK_REDIS") == "cluster",
		faults: os.Getenv("ANTEROOM_SOAK_FAULTS") != "off", room: true})
	if found != nil {
		t.Fatal(found.render(seed))
	}
}

// soakRun is what one soak runs.
type soakRun struct {
	length    time.Duration
	seed      uint64
	onCluster bool
	// bin is the anteroom binary the nodes run; empty builds this tree's.
	bin string
	// plan, when set, gives sale n's plan instead of drawing it.
	plan func(n int) plan
	// faults runs the random fault scheduler; room the safety-net room.
	faults, room bool
	// quiet prints only the verdict line.
	quiet bool
	// model, when set, receives porcupine's verdict on the run.
	model *modelVerdict
}

// runSoak runs r and returns the first violation it found, or nil. It
// prints the run's account either way.
func runSoak(t *testing.T, r soakRun) *violation {
	redis.SetLogger(quiet{})
	seed, length, onCluster := r.seed, r.length, r.onCluster
	fmt.Printf("SOAK seed %d, %s, redis %s\n", seed, length, cmp.Or(os.Getenv("ANTEROOM_SOAK_REDIS"), "primary+replica"))
	rnd := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	s := startSystem(t, onCluster, r.bin)
	h := newHistory()
	invites, err := tokens.NewInvites(s.dp.Secret)
	if err != nil {
		t.Fatal(err)
	}
	tickets, err := tokens.NewTickets(s.dp.Secret)
	if err != nil {
		t.Fatal(err)
	}
	c := newCrowd(h, s.urls(), invites, tickets)
	c.pushes = &pushes{key: s.pushKey}
	ss := &sales{s: s, h: h, c: c, rates: map[string][]rateAt{}, plan: r.plan}
	f := &faults{s: s, h: h, sales: ss, busy: map[string]bool{}, counts: map[string]int{}}
	ss.f = f

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), length)
	defer cancel()
	// Every generator is drawn here, in one order, before anything runs
	// concurrently: the seed replays the same plans and faults.
	salesRnd := rand.New(rand.NewPCG(rnd.Uint64(), rnd.Uint64()))
	faultsRnd := rand.New(rand.NewPCG(rnd.Uint64(), rnd.Uint64()))
	roomRnd := rand.New(rand.NewPCG(rnd.Uint64(), rnd.Uint64()))
	// The door's block list exists before any sale names it.
	if err := ss.setupDoor(ctx); err != nil {
		t.Fatalf("the door's block list: %v", err)
	}
	salesDone := make(chan struct{})
	go func() {
		defer close(salesDone)
		ss.run(ctx, salesRnd)
	}()
	roomDone := make(chan struct{})
	rm := &room{c: c, h: h, rnd: roomRnd, held: map[string]span{}}
	go func() {
		defer close(roomDone)
		if r.room {
			rm.run(ctx, s)
		}
	}()
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		if r.faults {
			f.run(ctx, faultsRnd)
		}
	}()
	go func() {
		for wait.Sleep(ctx, time.Second) {
			ss.sample(ctx)
		}
	}()
	var found *violation
	select {
	case v := <-h.found:
		found = &v
		cancel()
	case <-ctx.Done():
	}
	<-salesDone
	<-faultsDone
	<-roomDone
	f.wg.Wait()
	if found == nil {
		select {
		case v := <-h.found:
			found = &v
		default:
		}
	}
	// Porcupine's verdict, beside the checks above (issue 28).
	timeout, err := modelTimeout()
	if err != nil {
		t.Fatalf("ANTEROOM_SOAK_PORCUPINE_TIMEOUT: %v", err)
	}
	mv := h.checkModel(cmp.Or(os.Getenv("ANTEROOM_SOAK_ARTIFACTS"), os.TempDir()), timeout)
	if r.model != nil {
		*r.model = mv
	}
	if found == nil && mv.Failed != nil {
		found = mv.Failed
	}
	answered, total, nfaults := h.count()
	f.mu.Lock()
	var kinds []string
	for k, n := range f.counts {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(kinds)
	errs := slices.Clone(f.errs)
	f.mu.Unlock()
	ss.mu.Lock()
	done := ss.done
	ss.mu.Unlock()
	h.mu.Lock()
	inline := len(h.ops)
	h.mu.Unlock()
	verdict := "PASS"
	if onCluster {
		verdict = "(cluster) " + verdict
	}
	if found != nil {
		verdict = "FAIL"
	}
	fmt.Printf("SOAK %s: seed %d, %s; %d sales audited; faults: %s (%d fault events); %d of %d requests answered; %d answers checked as they came, %d sampler and audit checks; %s; %s\n",
		verdict, seed, time.Since(start).Round(time.Second), done, strings.Join(kinds, ", "), nfaults, answered, total, inline, ss.checks.Load(), h.doorTally(), mv)
	if r.quiet {
		return found
	}
	fmt.Printf("  answers: %s\n", h.tally())
	h.mu.Lock()
	for _, o := range h.ops {
		switch {
		case o.Kind == "audit" || (o.Kind == "staff" && strings.HasPrefix(o.Note, "sale ")):
			fmt.Printf("  %s\n", o.Note)
		case o.Kind == "staff" && (strings.HasPrefix(o.Note, "cancel ") || strings.HasPrefix(o.Note, "sweep ") || strings.Contains(o.Note, "/close ") || strings.Contains(o.Note, "/reopen ")):
			fmt.Printf("  %s staff: %s\n", o.At.Format("15:04:05.000"), o.Note)
		}
	}
	for ev, b := range h.sales {
		if ev == roomID {
			continue
		}
		fmt.Printf("  sale %s: at most %d people held an unused admission at once (max_active %d)\n", ev, b.maxActiveSeen, b.maxActive)
	}
	h.mu.Unlock()
	subscribed, notified, twice, tolerated := c.pushes.summary()
	fmt.Printf("  web push: %d subscriptions, %d notified, %d notified more than once (each across a fault: %d)\n", subscribed, notified, twice, tolerated)
	h.mu.Lock()
	holds, releases, cancels, restocked := 0, 0, 0, 0
	for _, hs := range h.holds {
		holds += len(hs)
	}
	for _, rs := range h.staffReleases {
		releases += len(rs)
	}
	for _, cs := range h.staffCancels {
		cancels += len(cs)
		for _, o := range cs {
			if o.Key == "restock" {
				restocked++
			}
		}
	}
	h.mu.Unlock()
	fmt.Printf("  staff: %d pauses and closures held, %d claims released by staff, %d cancelled (%d restocked)\n", holds, releases, cancels, restocked)
	rm.mu.Lock()
	fmt.Printf("  safety-net room: %d admissions\n", len(rm.issued))
	rm.mu.Unlock()
	ss.mu.Lock()
	fmt.Printf("  frontier: fastest 10 s window %.1f positions/s against a rate of at most 10/s (its no-show allowance %d)\n", ss.fastest, ss.fastestTol)
	ss.mu.Unlock()
	if len(errs) > 0 {
		fmt.Printf("faults that could not complete: %s\n", strings.Join(errs, "; "))
	}
	return found
}
