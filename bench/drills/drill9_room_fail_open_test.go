//go:build drills

package drills

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/failopenmap"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/internal/wait"
)

// visit is one request of the room drill's visitors through nginx.
type visit struct {
	sent     time.Time
	status   int
	site     bool // the site answered
	failOpen bool // nginx let it through on the gateway's deadline
	returner bool // a visitor with a cookie jar (else a newcomer)
}

// TestDrill9RoomFailOpen puts a safety-net room in front of a site with
// deploy/gateway/nginx-safety-net.conf in a real nginx, whose fail-open
// map `anteroom gateway fail-open -until` wrote before the fault (the
// operator's deadline, 16 s ahead). Visitors browse throughout: some keep
// their cookies (admitted once, then checked offline), some come new on
// every request. Redis is SIGKILLed at 4 s (the room cannot admit: its
// gate answers 503), the node at 8 s (nothing answers); at the deadline,
// with no one acting, nginx fails closed. The verdict: the room fails
// open within a second of each failure, every request between the
// failure and the deadline reaches the site, and none sent from the
// deadline on does.
func TestDrill9RoomFailOpen(t *testing.T) {
	d := newDrill(t, 9, "room-fail-open",
		"a safety-net room (max_active 10,000) behind `deploy/gateway/nginx-safety-net.conf` in a real nginx, with the gateway's fail-open "+
			"deadline written by `anteroom gateway fail-open -until` 16 s ahead; 8 visitors browse every 50 ms (4 keep their cookies, 4 come new "+
			"each time); redis-server SIGKILLed at 4 s, the `anteroom serve` process SIGKILLed at 8 s; nobody acts at the deadline")
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	dp := newDeployment(t)
	addr := loopback(t)
	node := dp.serve(t, "serve", addr, r.URL(), ns.URL())
	base := "http://" + addr
	room, _ := json.Marshal(map[string]any{
		"name": "drill room", "mode": "safety_net", "starts_at": time.Now().UTC().Add(-time.Second).Truncate(time.Second),
		"max_active": 10000, "admission_ttl_seconds": 120, "admit_rate_per_second": 1000,
		"limits": map[string]any{"join": map[string]any{"ip": map[string]any{"per_second": -1}}},
	})
	if status, raw := dp.AdminCall(base, http.MethodPut, "/admin/events/site", room); status != http.StatusCreated {
		t.Fatalf("create the room: %d %s", status, raw)
	}
	testenv.WaitFor(t, "the room on the node", 10*time.Second, func() bool {
		resp, err := http.Get(base + "/events/site")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "site page") }))
	t.Cleanup(site.Close)
	start := time.Now()
	deadline := start.Add(16 * time.Second).UTC().Truncate(time.Second)
	mapBody, err := exec.Command(anteroomBinary(t), "gateway", "fail-open", "-until", deadline.Format(time.RFC3339)).Output()
	if err != nil {
		t.Fatalf("anteroom gateway fail-open: %v", err)
	}
	mapFile := filepath.Join(t.TempDir(), "anteroom-fail-open.map")
	if err := os.WriteFile(mapFile, mapBody, 0o600); err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile("../../deploy/gateway/nginx-safety-net.conf")
	if err != nil {
		t.Fatal(err)
	}
	c := strings.Replace(string(conf), "127.0.0.1:8080", addr, 1)
	c = strings.Replace(c, "127.0.0.1:3000", strings.TrimPrefix(site.URL, "http://"), 1)
	gw := testenv.StartNginx(t, strings.ReplaceAll(c, failopenmap.Path, mapFile))
	d.phase("room, node and nginx up; deadline %s", deadline.Format(time.RFC3339))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	end := deadline.Add(4 * time.Second)
	var mu sync.Mutex
	var visits []visit
	var wg sync.WaitGroup
	var stop atomic.Bool
	for i := range 8 {
		returner := i < 4
		wg.Add(1)
		go func() {
			defer wg.Done()
			jar, _ := cookiejar.New(nil)
			cl := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			for !stop.Load() && ctx.Err() == nil {
				if returner {
					cl.Jar = jar
				}
				v := visit{sent: time.Now(), returner: returner}
				resp, err := cl.Get(gw.URL() + fmt.Sprintf("/products/%d", i))
				if err == nil {
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					v.status, v.site, v.failOpen = resp.StatusCode, string(body) == "site page", resp.Header.Get("X-Anteroom-Fail-Open") != ""
				}
				mu.Lock()
				visits = append(visits, v)
				mu.Unlock()
				wait.Sleep(ctx, 50*time.Millisecond)
			}
		}()
	}
	wait.Sleep(ctx, time.Until(start.Add(4*time.Second)))
	redisKilled := time.Now()
	r.Kill(t)
	d.phase("redis-server SIGKILLed")
	wait.Sleep(ctx, time.Until(start.Add(8*time.Second)))
	nodeKilled := time.Now()
	node.Kill()
	d.phase("anteroom serve SIGKILLed")
	wait.Sleep(ctx, time.Until(end))
	stop.Store(true)
	wg.Wait()
	d.phase("visitors done: %d requests", len(visits))

	type span struct {
		n, site, failOpen, refused int
		first                      time.Duration // first fail-open pass-through after the span's start; -1: none
	}
	count := func(from, to time.Time, who func(visit) bool) span {
		s := span{first: -1}
		for _, v := range visits {
			if v.sent.Before(from) || !v.sent.Before(to) || !who(v) {
				continue
			}
			s.n++
			if v.site {
				s.site++
			}
			if v.failOpen {
				s.failOpen++
				if s.first < 0 || v.sent.Sub(from) < s.first {
					s.first = v.sent.Sub(from)
				}
			}
			if v.status == http.StatusServiceUnavailable {
				s.refused++
			}
		}
		return s
	}
	all := func(visit) bool { return true }
	newcomers := func(v visit) bool { return !v.returner }
	returners := func(v visit) bool { return v.returner }
	up := count(start, redisKilled, all)
	redisDown := count(redisKilled, nodeKilled, all)
	redisDownNew := count(redisKilled, nodeKilled, newcomers)
	redisDownBack := count(redisKilled, nodeKilled, returners)
	nodeDown := count(nodeKilled, deadline, all)
	after := count(deadline, end, all)
	line := func(s span) string {
		return fmt.Sprintf("%d requests, %d reached the site (%d on the fail-open), %d answered 503", s.n, s.site, s.failOpen, s.refused)
	}
	d.figure("room up (0–4 s)", "%s", line(up))
	d.figure("Redis down (4–8 s)", "%s; newcomers: %s; returning: %s; first fail-open pass %s after the kill", line(redisDown), line(redisDownNew), line(redisDownBack), redisDown.first.Round(time.Millisecond))
	d.figure("node down until the deadline (8–16 s)", "%s; first fail-open pass %s after the kill", line(nodeDown), nodeDown.first.Round(time.Millisecond))
	d.figure("after the deadline (4 s)", "%s", line(after))

	d.check("room up: everyone through the gate", up.n > 0 && up.site == up.n && up.failOpen == 0, "%s", line(up))
	d.check("Redis down: fails open within 1 s", redisDownNew.first >= 0 && redisDownNew.first <= time.Second,
		"first newcomer through on the fail-open %s after Redis was killed", redisDownNew.first.Round(time.Millisecond))
	d.check("Redis down: admitted visitors still checked", redisDownBack.site == redisDownBack.n && redisDownBack.failOpen == 0,
		"returning visitors: %s (their admissions checked offline, no fail-open needed)", line(redisDownBack))
	d.check("node down: fails open within 1 s", nodeDown.first >= 0 && nodeDown.first <= time.Second,
		"first request through on the fail-open %s after the node was killed", nodeDown.first.Round(time.Millisecond))
	settled := count(nodeKilled.Add(time.Second), deadline, all)
	d.check("node down: everyone through until the deadline", settled.n > 0 && settled.site == settled.n,
		"from 1 s after the kill to the deadline: %s", line(settled))
	d.check("closes again at the deadline", after.n > 0 && after.site == 0 && after.refused == after.n,
		"requests sent from the deadline on: %s", line(after))
	d.summary = fmt.Sprintf("first pass-through %s after Redis died, %s after the node died; %d/%d requests through between the node's death and the deadline; %d/%d answered 503 after it",
		redisDownNew.first.Round(time.Millisecond), nodeDown.first.Round(time.Millisecond), nodeDown.site, nodeDown.n, after.refused, after.n)
}
