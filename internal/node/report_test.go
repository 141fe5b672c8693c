package node_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/report"
	"github.com/anteroom/anteroom/web/protect"
)

// TestReportOfASale runs a small sale whose truth is known — 12 joined,
// 7 came for their admission and claimed 5 units (2 too late), 5 never
// came, one claim released, 2 joins refused for a missing proof of work —
// against a real redis-server and JetStream, and checks the post-sale
// report against it, as JSON and as CSV; then a new node on the same
// Redis and JetStream gives the same report.
func TestReportOfASale(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	cfg := nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()})
	n, stop := startStoppable(t, cfg)
	const ev = "rep"
	sale := openSale(5, 1, time.Second, 0, 1000)
	sale["no_show_grace_seconds"] = 2
	sale["limits"] = map[string]any{"pow": map[string]any{"enabled": true, "bits": 1}}
	nodetest.CreateSale(t, n, ev, sale)
	base := n.URL() + "/events/" + ev

	for i := range 2 { // no proof of work: refused
		a := nodetest.Call(t, http.MethodPost, base+"/join", map[string]string{"X-User-ID": fmt.Sprint("bot", i)}, nil)
		problemOK(t, a, http.StatusForbidden, "pow_required")
	}
	tickets := map[string]string{}
	for i := range 12 {
		u := fmt.Sprint("u", i)
		ch := nodetest.Call(t, http.MethodGet, base+"/challenge", map[string]string{"X-User-ID": u}, nil)
		c := nodetest.Str(ch.Body, "challenge")
		j := nodetest.Call(t, http.MethodPost, base+"/join", map[string]string{"X-User-ID": u, protect.PoWHeader: c + ":" + protect.SolvePoW(c, 1)}, nil)
		if j.Status != http.StatusOK {
			t.Fatalf("join %s: %d %s", u, j.Status, j.Raw)
		}
		tickets[u] = nodetest.Str(j.Body, "ticket")
	}
	// Every admission is fetched before the first claim: once the five
	// units are gone the node's view says sold out, and a late poll would
	// get no token (at whatever tick the view saw the last claim).
	toks := make([]string, 7)
	for i := range toks {
		toks[i] = pollAdmission(t, n, ev, tickets[fmt.Sprint("u", i)])
	}
	var claims []string
	for i, tok := range toks {
		u := fmt.Sprint("u", i)
		a := nodetest.Call(t, http.MethodPost, base+"/claim", map[string]string{"X-User-ID": u, "Authorization": "Bearer " + tok}, nil)
		switch {
		case i < 5 && a.Status == http.StatusCreated:
			claims = append(claims, nodetest.Str(a.Body, "claim_id"))
		case i >= 5:
			problemOK(t, a, http.StatusGone, "sold_out")
		default:
			t.Fatalf("claim %s: %d %s", u, a.Status, a.Raw)
		}
	}
	rel := nodetest.Call(t, http.MethodPost, base+"/claims/"+claims[0]+"/release", map[string]string{"X-User-ID": "u0"}, nil)
	if rel.Status != http.StatusOK {
		t.Fatalf("release: %d %s", rel.Status, rel.Raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.StartWorker(ctx); err != nil {
		t.Fatal(err)
	}

	want := report.Funnel{Joined: 12, Admitted: 12, Present: 7, NoShows: 5, Granted: 5, Released: 1, Confirmed: 4, Buyers: 5, UnitsGranted: 5, UnitsReleased: 1}
	var got report.Report
	nodetest.WaitFor(t, "the report to show the whole sale", 20*time.Second, func() bool {
		got = getReport(t, n, ev)
		return got.Funnel == want
	})
	if got.JoinToAdmission.Count != 7 || sum(got.JoinToAdmission.Counts) != 7 {
		t.Errorf("join to admission %+v, want 7 people", got.JoinToAdmission)
	}
	if got.AdmissionToClaim.Count != 5 || sum(got.AdmissionToClaim.Counts) != 5 {
		t.Errorf("admission to claim %+v, want 5 claims", got.AdmissionToClaim)
	}
	wantRef := []report.Refusal{{Reason: "claim.sold_out", Count: 2}, {Reason: "join.pow_required", Count: 2}}
	if !reflect.DeepEqual(got.Refusals, wantRef) {
		t.Errorf("refusals %+v, want %+v", got.Refusals, wantRef)
	}
	if len(got.Lanes) != 1 || got.Lanes[0] != (report.Lane{Lane: "default", Joined: 12, Admitted: 12, Buyers: 5, UnitsGranted: 5, Confirmed: 4, Conversion: 5.0 / 12}) {
		t.Errorf("lanes %+v, want the default lane, 5 buyers of 12", got.Lanes)
	}
	if got.Draw.SeedCommitment == "" || got.Draw.Seed == "" || got.Draw.WindowSize == nil {
		t.Errorf("draw %+v, want the commitment, the revealed seed and W", got.Draw)
	}

	// The ETA's error: the default lane, all 12 in the sample; of the 7
	// who came, those who polled before the frontier passed them waited.
	if len(got.ETAError) != 1 || got.ETAError[0].Lane != "default" || got.ETAError[0].Stride != 1 || len(got.ETAError[0].Points) != 4 || got.ETAError[0].People > 7 {
		t.Fatalf("ETA error %+v, want the default lane, stride 1, four points, at most the 7 who came", got.ETAError)
	}
	checkReportCSV(t, n, ev, map[string]string{"funnel/joined": "12", "funnel/no_shows": "5", "funnel/confirmed": "4", "refusals/join.pow_required": "2", "lane:default/buyers": "5", "join_to_admission/count": "7",
		"eta_error:default/people": fmt.Sprint(got.ETAError[0].People), "eta_error:default/stride": "1"})

	// The node stops; a new one on the same Redis and JetStream gives the
	// same report.
	stop()
	sameReportOnNewNode(t, cfg, ev, got)
}

// startStoppable starts a node that the test may stop before its end.
func startStoppable(t *testing.T, cfg node.Config) (*node.Node, func()) {
	t.Helper()
	cfg.Addr, cfg.DataDir = "127.0.0.1:0", t.TempDir()
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Tap = nodetest.Tap(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := n.Close(ctx); err != nil {
				t.Errorf("close node: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return n, stop
}

func sum(xs []int64) (n int64) {
	for _, x := range xs {
		n += x
	}
	return n
}

// getReport reads the report as an admin; a 503 (the node has not read the
// event yet) answers the zero report.
func getReport(t *testing.T, n *node.Node, ev string) report.Report {
	t.Helper()
	a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/"+ev+"/report", map[string]string{"Authorization": "Bearer " + n.AdminToken}, nil)
	var r report.Report
	if a.Status == http.StatusServiceUnavailable {
		return r
	}
	if a.Status != http.StatusOK {
		t.Fatalf("report: %d %s", a.Status, a.Raw)
	}
	if err := json.Unmarshal(a.Raw, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// reportCSV reads the CSV report into "section/metric" → value.
func reportCSV(t *testing.T, n *node.Node, ev string) map[string]string {
	t.Helper()
	a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/"+ev+"/report.csv", map[string]string{"Authorization": "Bearer " + n.AdminToken}, nil)
	if a.Status != http.StatusOK || a.Header.Get("Content-Type") != "text/csv; charset=utf-8" {
		t.Fatalf("report.csv: %d %s %s", a.Status, a.Header.Get("Content-Type"), a.Raw)
	}
	recs, err := csv.NewReader(bytes.NewReader(a.Raw)).ReadAll()
	if err != nil {
		t.Fatalf("report.csv does not parse: %v", err)
	}
	if !reflect.DeepEqual(recs[0], report.CSVHeader) {
		t.Fatalf("CSV header %v, want %v", recs[0], report.CSVHeader)
	}
	out := map[string]string{}
	for _, r := range recs[1:] {
		out[r[0]+"/"+r[1]] = r[2]
	}
	return out
}

// checkReportCSV checks rows of event ev's CSV report ("section/metric" →
// value).
func checkReportCSV(t *testing.T, n *node.Node, ev string, want map[string]string) {
	t.Helper()
	rows := reportCSV(t, n, ev)
	for k, v := range want {
		if rows[k] != v {
			t.Errorf("CSV %s = %q, want %q", k, rows[k], v)
		}
	}
}

// sameReportOnNewNode starts a new node on cfg's Redis and JetStream and
// checks that it gives event ev's report as got (the moment aside): every
// figure is durable.
func sameReportOnNewNode(t *testing.T, cfg node.Config, ev string, got report.Report) {
	t.Helper()
	n := nodetest.Start(t, cfg)
	var again report.Report
	nodetest.WaitFor(t, "the new node's report", 10*time.Second, func() bool {
		again = getReport(t, n, ev)
		return again.Event == ev
	})
	again.GeneratedAt = got.GeneratedAt
	if !reflect.DeepEqual(again, got) {
		t.Errorf("after a restart the report is\n%+v\nwant\n%+v", again, got)
	}
}
