package node_test

import (
	"crypto/rand"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/tokens"
)

// TestDoorSinkLaneWait: a sunk join with a lane invite waits in that
// lane as its genuine members do (issue 35: no state, field, header or
// timing that tells a sink from a real wait). The lane admits 2 a
// second (a tenth of 20), the default lane 18, or nothing yet when the
// sale starts later. Against the last of 40 real members of the lane,
// polled at the same moment, the sunk member's join names the lane in
// its seq as theirs does; its status has the same fields, headers and
// cookies, the same lane frontier (position − ahead), at least 90 s of
// the lane's rate ahead (not of the default lane's), and an ETA drawn
// from the lane's pace (the same seconds per person ahead); the basic
// page shows the same. Once the lane's frontier passes the sunk
// member's number, it still waits, and is never admitted.
//
// It failed before the sunk join took a number in its lane: the answer
// was the default lane's, in the prequeue of a sale starting later
// ('sunk status: state prequeue, want waiting as the lane's member') and
// 1,620 to 2,430 people ahead (90 s of the default lane's 18/s) and an
// ETA of 0.055 s a person ahead (the lane's: 0.5) beside a sale open.
func TestDoorSinkLaneWait(t *testing.T) {
	for _, c := range []struct {
		name    string
		startIn time.Duration
	}{{"lane before the sale", 30 * time.Minute}, {"lane beside the sale", 0}} {
		t.Run(c.name, func(t *testing.T) { sinkLaneWait(t, c.startIn) })
	}
}

func sinkLaneWait(t *testing.T, startIn time.Duration) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TicketSecret: secret}))
	const rate, share = 20.0, 0.1
	laneRate := rate * share
	sale := openSale(10, 1, startIn, 0, rate)
	sale["lanes"] = []any{map[string]any{"name": "members", "share": share, "starts_at": time.Now().UTC().Truncate(time.Second).Add(-time.Second)}}
	sale["door"] = map[string]any{"rules": []map[string]string{rule("bots", "sink")}}
	nodetest.CreateSale(t, n, "sw", sale)
	inv, _ := tokens.NewInvites(secret)
	invite := func(u string) map[string]string {
		return map[string]string{"X-User-ID": u, tokens.InviteHeader: inv.SignLane("sw", u, "members", time.Now().Add(time.Hour))}
	}
	bearer := func(a nodetest.Answer) map[string]string {
		return map[string]string{"Authorization": "Bearer " + nodetest.Str(a.Body, "ticket")}
	}
	poll := func(a nodetest.Answer) nodetest.Answer {
		t.Helper()
		s := nodetest.Call(t, http.MethodGet, n.URL()+"/events/sw/status", bearer(a), nil)
		if s.Status != http.StatusOK {
			t.Fatalf("status: %d %s", s.Status, s.Raw)
		}
		return s
	}
	// The lane's first member, once the node's view holds the lane (a
	// ticket of a lane the view lacks waits without a place, sunk or not).
	realJ := []nodetest.Answer{join(t, n, "sw", invite("m0"))}
	nodetest.WaitFor(t, "the view of the lane", 10*time.Second, func() bool {
		return poll(realJ[0]).Body["position"] != nil
	})
	// The sunk member joins next: its number (at most 2, as the second
	// real member's) is among the first the lane's frontier passes.
	sunkJ := join(t, n, "sw", with(invite("bot"), "X-Test-Door", "bots"))
	for i := 1; i < 40; i++ {
		realJ = append(realJ, join(t, n, "sw", invite(fmt.Sprint("m", i))))
	}
	last := realJ[len(realJ)-1]
	for _, a := range []nodetest.Answer{sunkJ, last} {
		if a.Status != http.StatusOK || nodetest.Str(a.Body, "lane") != "members" {
			t.Fatalf("a lane join: %d %s, want 200 naming lane members", a.Status, a.Raw)
		}
	}
	seqOf := func(a nodetest.Answer) int64 {
		s, _ := a.Body["seq"].(float64)
		return int64(s)
	}
	if lane, _ := queue.Unlane(seqOf(sunkJ)); lane != 1 {
		t.Errorf("sunk join: seq %d is of lane %d, want 1 as the members' (%d)", seqOf(sunkJ), lane, seqOf(last))
	}
	num := func(a nodetest.Answer, k string) float64 { v, _ := a.Body[k].(float64); return v }
	// The lane's least sunk wait: about 90 s of its rate (SunkAhead).
	least := math.Max(laneRate*90, 20)

	rs, ss := poll(last), poll(sunkJ)
	if st := nodetest.Str(rs.Body, "state"); st != "waiting" {
		t.Fatalf("the lane's last member: %s, want waiting (the lane admits %.0f/s)", rs.Raw, laneRate)
	}
	if st := nodetest.Str(ss.Body, "state"); st != "waiting" {
		t.Fatalf("sunk status: state %s, want waiting as the lane's member: %s (member %s)", st, ss.Raw, rs.Raw)
	}
	if !slices.Equal(keysOf(rs.Body), keysOf(ss.Body)) || !slices.Equal(headerNames(rs.Header), headerNames(ss.Header)) || !slices.Equal(cookieNames(rs.Header), cookieNames(ss.Header)) {
		t.Errorf("status answers differ in shape:\nmember %s %v %v\nsunk   %s %v %v", rs.Raw, headerNames(rs.Header), cookieNames(rs.Header), ss.Raw, headerNames(ss.Header), cookieNames(ss.Header))
	}
	ahead := num(ss, "ahead")
	if ahead < least || ahead > least*1.5+1 {
		t.Errorf("sunk status: %.0f ahead, want %.0f to %.0f (90 s of the lane's %.0f/s): %s", ahead, least, least*1.5+1, laneRate, ss.Raw)
	}
	// The same frontier: position − ahead is F + 1 for both (the lane
	// admits 2 a second; the polls are a tick apart at most).
	if fr, fs := num(rs, "position")-num(rs, "ahead"), num(ss, "position")-ahead; math.Abs(fr-fs) > 2 {
		t.Errorf("frontier behind the member %.0f, behind the sunk %.0f: %s, %s", fr, fs, rs.Raw, ss.Raw)
	}
	// The lane's pace: the same seconds per person ahead (ETA's rule).
	perReal := num(rs, "eta_seconds") / (num(rs, "ahead") + 1)
	perSunk := num(ss, "eta_seconds") / (ahead + 1)
	if perSunk < perReal*0.8 || perSunk > perReal*1.25 {
		t.Errorf("ETA per person ahead: member %.3f s, sunk %.3f s, want the lane's pace: %s, %s", perReal, perSunk, rs.Raw, ss.Raw)
	}
	if pa := num(ss, "poll_after_ms"); pa < 800 || pa > 1.2*30000 {
		t.Errorf("sunk poll_after_ms %.0f, want a waiter's (0.8 s to 36 s)", pa)
	}

	// The basic page (no JavaScript) shows the same: the state, and the
	// lane's wait.
	basic := func(a nodetest.Answer) (state string, ahead float64) {
		t.Helper()
		p := nodetest.Call(t, http.MethodGet, n.URL()+"/e/sw/basic", bearer(a), nil)
		if p.Status != http.StatusOK {
			t.Fatalf("basic page: %d %.300s", p.Status, p.Raw)
		}
		ahead, _ = strconv.ParseFloat(regexp.MustCompile(`\D`).ReplaceAllString(match1(basicAhead, string(p.Raw)), ""), 64)
		return match1(basicState, string(p.Raw)), ahead
	}
	rState, _ := basic(last)
	sState, sAhead := basic(sunkJ)
	if rState == "" || sState != rState {
		t.Errorf("basic page: sunk state %q, member %q", sState, rState)
	}
	if sAhead < least || sAhead > least*1.5+1 {
		t.Errorf("basic page: sunk %.0f ahead, want %.0f to %.0f", sAhead, least, least*1.5+1)
	}

	// The frontier passes the sunk member's number (at most 2) once the
	// lane's second member is admitted: the sunk one waits on, never
	// admitted.
	nodetest.WaitFor(t, "the lane's second member's admission", 20*time.Second, func() bool {
		return nodetest.Str(poll(realJ[1]).Body, "admission_token") != ""
	})
	for range 20 {
		s := poll(sunkJ)
		if nodetest.Str(s.Body, "state") != "waiting" || s.Body["admission_token"] != nil || num(s, "ahead") < least {
			t.Fatalf("sunk poll behind the lane's frontier: %s, want waiting with at least %.0f ahead", s.Raw, least)
		}
	}
}

// basicAhead and basicState read the basic page's people ahead and its
// state's text.
var (
	basicAhead = regexp.MustCompile(`<dd id="ahead">([^<]*)</dd>`)
	basicState = regexp.MustCompile(`data-state="([^"]*)"`)
)
