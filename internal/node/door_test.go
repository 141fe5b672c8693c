package node_test

import (
	"context"
	"hash/fnv"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

// The door on a real node (real Redis and NATS). The node's views of the
// lists and the rules are the small ones below (node.Config.DoorLists,
// DoorRules): testLists answers Maybe for a listed user, as a filter
// does, and lays the exact copy the join script reads in package
// door/lists' layout, written here; headerRules matches the rule named by
// the request's X-Test-Door header.

// testLists is a node's view of user lists: a listed user is Maybe (a
// filter's answer for a member), anyone else Absent, and each change
// rewrites the list's exact copy in the queue slot of each sale in sales.
type testLists struct {
	mu  sync.Mutex
	on  map[string]map[string]bool
	rdb *redis.Client
}

func newTestLists(rdb *redis.Client) *testLists {
	return &testLists{on: map[string]map[string]bool{}, rdb: rdb}
}

func (l *testLists) User(list, user string) door.Membership {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on[list][user] {
		return door.Maybe
	}
	return door.Absent
}

func (l *testLists) Addr(string, netip.Addr) door.Membership { return door.Absent }

func (l *testLists) Hash(user string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(user))
	return h.Sum64()
}

// set puts user on list (or takes them off) and rewrites the list's copy
// in event ev's queue slot.
func (l *testLists) set(t *testing.T, ev, list, user string, on bool) {
	t.Helper()
	l.mu.Lock()
	if l.on[list] == nil {
		l.on[list] = map[string]bool{}
	}
	l.on[list][user] = on
	var hs []uint64
	for u, in := range l.on[list] {
		if in {
			hs = append(hs, l.Hash(u))
		}
	}
	l.mu.Unlock()
	sort.Slice(hs, func(i, j int) bool { return hs[i] < hs[j] })
	fields := map[string]string{}
	for _, h := range hs {
		a := lists.Arg(h)
		fields[a[:2]] += a[2:]
	}
	ctx := context.Background()
	key := lists.CopyKey(queue.LaneTag(ev, 0), list)
	if err := l.rdb.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	for f, v := range fields {
		if err := l.rdb.HSet(ctx, key, f, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// falsePositive makes the view answer Maybe for user without putting them
// on the copy: the filter's false positive, which the join script decides.
func (l *testLists) falsePositive(list, user string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on[list] == nil {
		l.on[list] = map[string]bool{}
	}
	l.on[list][user] = true
}

// headerRules matches the rule of the sale named by X-Test-Door.
type headerRules struct{}

func (headerRules) Match(cfg *event.Config, r *door.Request) (string, door.Action, bool) {
	name := r.Header("X-Test-Door")
	for _, rule := range cfg.Door.Rules {
		if rule.Name == name && name != "" {
			return rule.Name, map[string]door.Action{"queue": door.Queue, "bypass": door.Bypass, "block": door.Block, "challenge": door.Challenge, "sink": door.Sink}[rule.Then], true
		}
	}
	return "", door.Queue, false
}

// doorNode starts a node in header mode with the test view of the lists
// and, unless realRules, the test rules (else the node's own CEL
// engine, package door/rules).
func doorNode(t *testing.T, manual, realRules bool) (*node.Node, *testenv.Redis, *testLists) {
	t.Helper()
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	l := newTestLists(r.Client(t))
	cfg := node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Manual: manual, DoorLists: l}
	if !realRules {
		cfg.DoorRules = headerRules{}
	}
	n := nodetest.Start(t, nodetest.HeaderMode(cfg))
	// The lists the tests' doors name exist in the node's store (a save
	// naming an unknown list is refused); their entries are the test
	// view's, written into the copies by testLists.set.
	for _, name := range []string{"resellers", "registered"} {
		if _, err := n.Lists.Create(context.Background(), name, lists.KindUser); err != nil {
			t.Fatal(err)
		}
	}
	return n, r, l
}

// rule is a door rule that matches a request whose X-Test-Door header is
// its name: in CEL for the node's engine, by name for headerRules.
func rule(name, then string) map[string]string {
	return map[string]string{"name": name, "when": `request.headers["x-test-door"] == "` + name + `"`, "then": then}
}

// bothRules runs f with the test rules and with the node's CEL engine.
func bothRules(t *testing.T, f func(t *testing.T, real bool)) {
	t.Run("test-rules", func(t *testing.T) { f(t, false) })
	t.Run("cel", func(t *testing.T) { f(t, true) })
}

func user(u string) map[string]string { return map[string]string{"X-User-ID": u} }

// TestDoorBlockList: a listed user is refused 403 blocked at the join
// (decided by the join script: the view says only "maybe") with nothing
// written; a user listed after joining and being admitted is refused at
// their next status poll, at the gate and at the claim, and nothing is
// claimed; taken off the list, the same token claims.
func TestDoorBlockList(t *testing.T) {
	n, r, l := doorNode(t, false, false)
	sale := openSale(10, 1, 0, 0, 100)
	sale["door"] = map[string]any{"block_lists": []string{"resellers"}}
	nodetest.CreateSale(t, n, "blk", sale)
	l.set(t, "blk", "resellers", "mallory", true)
	base := n.URL() + "/events/blk"

	j := nodetest.Call(t, http.MethodPost, base+"/join", user("mallory"), nil)
	if j.Status != http.StatusForbidden || nodetest.Str(j.Body, "code") != "blocked" {
		t.Fatalf("listed join: %d %s, want 403 blocked", j.Status, j.Raw)
	}
	if strings.Contains(string(j.Raw), "resellers") {
		t.Fatalf("the refusal names the list: %s", j.Raw)
	}
	rdb := r.Client(t)
	if seq, _ := rdb.Get(context.Background(), queue.KeysFor("blk").Seq).Int64(); seq != 0 {
		t.Fatalf("a refused join took seq %d", seq)
	}
	token := nodetest.AdmitUser(t, n, "blk", "alice")
	j = nodetest.Call(t, http.MethodPost, base+"/join", user("alice"), nil)
	ticket := nodetest.Str(j.Body, "ticket")

	l.set(t, "blk", "resellers", "alice", true) // listed after joining
	for _, c := range []struct {
		name, method, path string
		hdr                map[string]string
	}{
		{"status", http.MethodGet, "/status", map[string]string{"Authorization": "Bearer " + ticket}},
		{"gate", http.MethodGet, "/gate", map[string]string{"Authorization": "Bearer " + token}},
		{"claim", http.MethodPost, "/claim", with(user("alice"), "Authorization", "Bearer "+token)},
		{"join again", http.MethodPost, "/join", user("alice")},
	} {
		a := nodetest.Call(t, c.method, base+c.path, c.hdr, nil)
		if a.Status != http.StatusForbidden || nodetest.Str(a.Body, "code") != "blocked" {
			t.Fatalf("%s of a user listed later: %d %s, want 403 blocked", c.name, a.Status, a.Raw)
		}
	}
	claims := nodetest.Call(t, http.MethodGet, base+"/claims", user("alice"), nil)
	if strings.Contains(string(claims.Raw), "claim_id") {
		t.Fatalf("a blocked claim was recorded: %s", claims.Raw)
	}
	l.set(t, "blk", "resellers", "alice", false)
	if a := nodetest.Call(t, http.MethodPost, base+"/claim", with(user("alice"), "Authorization", "Bearer "+token), nil); a.Status != http.StatusCreated {
		t.Fatalf("claim once off the list: %d %s", a.Status, a.Raw)
	}
}

// TestDoorEligibility: a sale open only to its list refuses a caller on
// no list 403 not_eligible with the sale's message, at the join and the
// status poll; a member joins; a filter's false positive is caught by
// the join script's exact copy.
func TestDoorEligibility(t *testing.T) {
	n, _, l := doorNode(t, false, false)
	sale := openSale(10, 1, 0, 0, 100)
	sale["door"] = map[string]any{"eligible_lists": []string{"registered"}, "not_eligible_message": "pre-registered members only"}
	nodetest.CreateSale(t, n, "elig", sale)
	l.set(t, "elig", "registered", "alice", true)
	l.falsePositive("registered", "bob")
	base := n.URL() + "/events/elig"
	for _, u := range []string{"carol", "bob"} {
		j := nodetest.Call(t, http.MethodPost, base+"/join", user(u), nil)
		if j.Status != http.StatusForbidden || nodetest.Str(j.Body, "code") != "not_eligible" || nodetest.Str(j.Body, "detail") != "pre-registered members only" {
			t.Fatalf("%s: %d %s, want 403 not_eligible with the sale's message", u, j.Status, j.Raw)
		}
	}
	j := nodetest.Call(t, http.MethodPost, base+"/join", user("alice"), nil)
	if j.Status != http.StatusOK {
		t.Fatalf("member: %d %s", j.Status, j.Raw)
	}
	l.set(t, "elig", "registered", "alice", false) // taken off: the next poll
	s := nodetest.Call(t, http.MethodGet, base+"/status", map[string]string{"Authorization": "Bearer " + nodetest.Str(j.Body, "ticket")}, nil)
	if s.Status != http.StatusForbidden || nodetest.Str(s.Body, "code") != "not_eligible" {
		t.Fatalf("status after removal: %d %s", s.Status, s.Raw)
	}
}

// TestDoorRules: a rule's block refuses; its bypass admits a join at once
// (and the token claims) and lets the gate through without a token; its
// challenge asks for the proof of work of a sale that asks for none (and
// the challenge endpoint issues one); no rule matching queues as before.
func TestDoorRules(t *testing.T) { bothRules(t, doorRules) }

func doorRules(t *testing.T, real bool) {
	n, _, _ := doorNode(t, false, real)
	sale := openSale(10, 1, 0, 0, 1)
	sale["door"] = map[string]any{"rules": []map[string]string{rule("no", "block"), rule("partner", "bypass"), rule("hard", "challenge")}}
	nodetest.CreateSale(t, n, "rules", sale)
	base := n.URL() + "/events/rules"
	if a := nodetest.Call(t, http.MethodPost, base+"/join", with(user("a"), "X-Test-Door", "no"), nil); a.Status != http.StatusForbidden || nodetest.Str(a.Body, "code") != "blocked" {
		t.Fatalf("block: %d %s", a.Status, a.Raw)
	}
	a := nodetest.Call(t, http.MethodPost, base+"/join", with(user("p"), "X-Test-Door", "partner"), nil)
	if a.Status != http.StatusOK || nodetest.Str(a.Body, "state") != "admitted" || nodetest.Str(a.Body, "admission_token") == "" {
		t.Fatalf("bypass join: %d %s", a.Status, a.Raw)
	}
	if c := nodetest.Call(t, http.MethodPost, base+"/claim", with(user("p"), "Authorization", "Bearer "+nodetest.Str(a.Body, "admission_token")), nil); c.Status != http.StatusCreated {
		t.Fatalf("bypassed claim: %d %s", c.Status, c.Raw)
	}
	if g := nodetest.Call(t, http.MethodGet, base+"/gate", map[string]string{"X-Test-Door": "partner"}, nil); g.Status != http.StatusNoContent {
		t.Fatalf("bypass gate: %d %s", g.Status, g.Raw)
	}
	if g := nodetest.Call(t, http.MethodGet, base+"/gate", nil, nil); g.Status != http.StatusUnauthorized {
		t.Fatalf("gate without a rule: %d %s, want 401", g.Status, g.Raw)
	}
	if c := nodetest.Call(t, http.MethodPost, base+"/join", with(user("c"), "X-Test-Door", "hard"), nil); c.Status != http.StatusForbidden || nodetest.Str(c.Body, "code") != "pow_required" {
		t.Fatalf("challenge: %d %s, want 403 pow_required", c.Status, c.Raw)
	}
	if ch := nodetest.Call(t, http.MethodGet, base+"/challenge", user("c"), nil); ch.Body["required"] != true {
		t.Fatalf("challenge endpoint: %s, want a challenge", ch.Raw)
	}
	if q := nodetest.Call(t, http.MethodPost, base+"/join", user("q"), nil); q.Status != http.StatusOK || nodetest.Str(q.Body, "ticket") == "" {
		t.Fatalf("no rule: %d %s", q.Status, q.Raw)
	}
}

// keysOf is the sorted keys of a JSON object.
func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// cookieNames is the sorted names of the cookies an answer sets.
func cookieNames(h http.Header) []string {
	var out []string
	for _, c := range (&http.Response{Header: h}).Cookies() {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out
}

// headerNames is the sorted names of an answer's headers, less those
// whose value differs between any two answers (date, length, request id).
func headerNames(h http.Header) []string {
	var out []string
	for k := range h {
		switch k {
		case "Date", "Content-Length", "X-Request-Id":
			continue
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestDoorSink: a sunk caller and a real one behind the same frontier get
// answers of one shape (fields, headers, cookies set) at the join and at
// each poll; the real one is admitted, the sunk one never, however far
// the frontier moves, and its polls issue no Redis command. A rule that
// sinks a real ticket holder takes effect at their next poll.
func TestDoorSink(t *testing.T) { bothRules(t, doorSink) }

func doorSink(t *testing.T, real bool) {
	n, r, _ := doorNode(t, true, real)
	sale := openSale(10, 1, 0, 0, 50)
	sale["door"] = map[string]any{"rules": []map[string]string{rule("bots", "sink")}}
	nodetest.CreateSale(t, n, "sink", sale)
	base := n.URL() + "/events/sink"
	refresh := func() {
		t.Helper()
		if err := n.Snapshots.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	refresh()
	realJ := nodetest.Call(t, http.MethodPost, base+"/join", user("real"), nil)
	sunkJ := nodetest.Call(t, http.MethodPost, base+"/join", with(user("bot"), "X-Test-Door", "bots"), nil)
	later := nodetest.Call(t, http.MethodPost, base+"/join", user("later"), nil)
	for _, a := range []nodetest.Answer{realJ, sunkJ, later} {
		if a.Status != http.StatusOK {
			t.Fatalf("join: %d %s", a.Status, a.Raw)
		}
	}
	if !slices.Equal(keysOf(realJ.Body), keysOf(sunkJ.Body)) || !slices.Equal(cookieNames(realJ.Header), cookieNames(sunkJ.Header)) || !slices.Equal(headerNames(realJ.Header), headerNames(sunkJ.Header)) {
		t.Fatalf("join answers differ in shape:\nreal %s %v %v\nsunk %s %v %v", realJ.Raw, cookieNames(realJ.Header), headerNames(realJ.Header), sunkJ.Raw, cookieNames(sunkJ.Header), headerNames(sunkJ.Header))
	}
	if nodetest.Str(sunkJ.Body, "state") != "waiting" {
		t.Fatalf("sunk join: %s", sunkJ.Raw)
	}
	bearer := func(a nodetest.Answer) map[string]string {
		return map[string]string{"Authorization": "Bearer " + nodetest.Str(a.Body, "ticket")}
	}
	poll := func(a nodetest.Answer, extra ...string) nodetest.Answer {
		t.Helper()
		h := bearer(a)
		if len(extra) == 2 {
			h[extra[0]] = extra[1]
		}
		s := nodetest.Call(t, http.MethodGet, base+"/status", h, nil)
		if s.Status != http.StatusOK {
			t.Fatalf("status: %d %s", s.Status, s.Raw)
		}
		return s
	}
	// Behind the same frontier (nobody admitted yet): one shape.
	rs, ss := poll(realJ), poll(sunkJ)
	if !slices.Equal(keysOf(rs.Body), keysOf(ss.Body)) || !slices.Equal(cookieNames(rs.Header), cookieNames(ss.Header)) || !slices.Equal(headerNames(rs.Header), headerNames(ss.Header)) {
		t.Fatalf("status answers differ in shape:\nreal %s %v\nsunk %s %v", rs.Raw, headerNames(rs.Header), ss.Raw, headerNames(ss.Header))
	}
	// The frontier passes everyone who joined: the real callers are
	// admitted, the sunk one is not.
	nodetest.WaitFor(t, "the real caller's admission", 0, func() bool {
		refresh()
		return nodetest.Str(poll(realJ).Body, "admission_token") != ""
	})
	nodetest.WaitFor(t, "the later caller's admission", 0, func() bool {
		refresh()
		return nodetest.Str(poll(later).Body, "state") == "admitted"
	})
	before := r.CommandCount(t)
	for range 50 {
		s := poll(sunkJ)
		if st := nodetest.Str(s.Body, "state"); st != "waiting" || s.Body["admission_token"] != nil || s.Body["ahead"].(float64) < 20 {
			t.Fatalf("sunk poll behind a frontier past everyone: %s", s.Raw)
		}
		if len(cookieNames(s.Header)) != 0 {
			t.Fatalf("sunk poll set cookies %v", cookieNames(s.Header))
		}
	}
	if after := r.CommandCount(t); after != before {
		t.Fatalf("50 sunk polls ran %d Redis commands, want 0", after-before)
	}
	// A rule sinks a real ticket holder: their next poll waits.
	s := poll(realJ, "X-Test-Door", "bots")
	if nodetest.Str(s.Body, "state") != "waiting" || s.Body["admission_token"] != nil {
		t.Fatalf("a real ticket sunk by a rule: %s", s.Raw)
	}
	// And their admission no longer claims.
	tok := nodetest.Str(poll(later).Body, "admission_token")
	if c := nodetest.Call(t, http.MethodPost, base+"/claim", with(with(user("later"), "Authorization", "Bearer "+tok), "X-Test-Door", "bots"), nil); c.Status != http.StatusUnauthorized {
		t.Fatalf("a sunk claim: %d %s, want 401", c.Status, c.Raw)
	}
	// A sunk join takes about as long as a real one (logged: timing is
	// not asserted on a shared machine).
	median := func(hdr func(i int) map[string]string) time.Duration {
		var ds []time.Duration
		for i := range 21 {
			start := time.Now()
			nodetest.Call(t, http.MethodPost, base+"/join", hdr(i), nil)
			ds = append(ds, time.Since(start))
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	realMedian := median(func(i int) map[string]string { return user("r" + string(rune('a'+i))) })
	sunkMedian := median(func(i int) map[string]string { return with(user("s"+string(rune('a'+i))), "X-Test-Door", "bots") })
	t.Logf("join medians over 21: real %s, sunk %s", realMedian, sunkMedian)
	// The sink is counted for the report (a refusal reason of its own).
	rep := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/sink/report", map[string]string{"Authorization": "Bearer " + n.AdminToken}, nil)
	if !strings.Contains(string(rep.Raw), `{"reason":"join.sink","count":22}`) {
		t.Fatalf("report: %s, want join.sink counted 22 times", rep.Raw)
	}
}

// TestDoorRealLists: the node's own lists (package door/lists' Store and
// each node's view) on a Redis Cluster, for a sale of 8 join shards: the
// listed users are refused at the join on whichever shard they land (the
// view's "maybe" decided by the join script against the copy in that
// shard's slot), the others join; a user added to the list after joining
// is refused at their next poll once the view has the change.
func TestDoorRealLists(t *testing.T) {
	rc := testenv.StartRedisCluster(t, 3)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisClusterAddrs: rc.Addrs(), NATSURL: ns.URL()}))
	ctx := context.Background()
	if _, err := n.Lists.Create(ctx, "resellers", "user"); err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for i := range 30 {
		u := "u" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if i%3 == 0 {
			listed[u] = true
			if _, err := n.Lists.Add(ctx, "resellers", u); err != nil {
				t.Fatal(err)
			}
		} else {
			listed[u] = false
		}
	}
	sale := openSale(100, 1, 0, 0, 0.001)
	sale["join_shards"] = 8
	sale["door"] = map[string]any{"block_lists": []string{"resellers"}}
	nodetest.CreateSale(t, n, "rl", sale)
	cfg, err := n.Events.Get(ctx, "rl")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Lists.Sync(ctx, &cfg); err != nil { // the copies (a staff save makes them)
		t.Fatal(err)
	}
	nodetest.WaitFor(t, "the view to hold the list", 20*time.Second, func() bool {
		return n.ListView.User("resellers", "uaa") == door.Maybe
	})
	base := n.URL() + "/events/rl"
	tickets := map[string]string{}
	for u, bad := range listed {
		j := nodetest.Call(t, http.MethodPost, base+"/join", user(u), nil)
		switch {
		case bad && (j.Status != http.StatusForbidden || nodetest.Str(j.Body, "code") != "blocked"):
			t.Fatalf("listed %s: %d %s, want 403 blocked", u, j.Status, j.Raw)
		case !bad && j.Status != http.StatusOK:
			t.Fatalf("%s: %d %s", u, j.Status, j.Raw)
		}
		tickets[u] = nodetest.Str(j.Body, "ticket")
	}
	if _, err := n.Lists.Add(ctx, "resellers", "uba"); err != nil { // joined, listed now
		t.Fatal(err)
	}
	nodetest.WaitFor(t, "the next poll to refuse", 20*time.Second, func() bool {
		s := nodetest.Call(t, http.MethodGet, base+"/status", map[string]string{"Authorization": "Bearer " + tickets["uba"]}, nil)
		return s.Status == http.StatusForbidden && nodetest.Str(s.Body, "code") == "blocked"
	})
}

// TestDoorRoom: a safety-net room's door: a rule's block refuses the
// room's join and the gate 403 blocked; its bypass admits the join at
// once without a place (not counted under max_active: the next visitor is
// still let in at once) and lets the gate through; its sink sends a gate
// visitor with a valid admission to the waiting page.
func TestDoorRoom(t *testing.T) {
	n, _, _ := doorNode(t, true, true)
	room := safetyNet(1, 60, 100)
	room["door"] = map[string]any{"rules": []map[string]string{rule("no", "block"), rule("partner", "bypass"), rule("bots", "sink")}}
	nodetest.CreateSale(t, n, "room", room)
	if err := n.Snapshots.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	base := n.URL() + "/events/room"
	for _, path := range []string{"/join", "/gate"} {
		method := http.MethodPost
		if path == "/gate" {
			method = http.MethodGet
		}
		if a := nodetest.Call(t, method, base+path, with(user("x"), "X-Test-Door", "no"), nil); a.Status != http.StatusForbidden || nodetest.Str(a.Body, "code") != "blocked" {
			t.Fatalf("blocked %s: %d %s", path, a.Status, a.Raw)
		}
	}
	p := nodetest.Call(t, http.MethodPost, base+"/join", with(user("p"), "X-Test-Door", "partner"), nil)
	if p.Status != http.StatusOK || nodetest.Str(p.Body, "state") != "admitted" || p.Body["position"] != nil {
		t.Fatalf("bypassed room join: %d %s", p.Status, p.Raw)
	}
	v := nodetest.Call(t, http.MethodPost, base+"/join", user("v"), nil)
	tok := nodetest.Str(v.Body, "admission_token")
	if tok == "" {
		t.Fatalf("the first visitor after a bypass (max_active 1): %s, want admitted at once", v.Raw)
	}
	if g := nodetest.Call(t, http.MethodGet, base+"/gate", map[string]string{"Authorization": "Bearer " + tok}, nil); g.Status != http.StatusNoContent {
		t.Fatalf("gate with the admission: %d %s", g.Status, g.Raw)
	}
	g := nodetest.Call(t, http.MethodGet, base+"/gate", map[string]string{"Authorization": "Bearer " + tok, "X-Test-Door": "bots"}, nil)
	if g.Status != http.StatusUnauthorized || g.Header.Get("X-Anteroom-Redirect") == "" {
		t.Fatalf("sunk gate visitor: %d %s, want 401 to the waiting page", g.Status, g.Raw)
	}
}

// TestRefusedSaveKeepsDoorCopies: a save that drops the sale's block list
// and is then refused (its mode locked since the start) must leave the
// list's copies the join script reads: the stored configuration still
// names the list, so a listed user's join stays 403 blocked. A save that
// is taken drops them.
func TestRefusedSaveKeepsDoorCopies(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	if _, err := n.Lists.Create(ctx, "resellers", lists.KindUser); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Lists.Add(ctx, "resellers", "mallory"); err != nil {
		t.Fatal(err)
	}
	sale := openSale(10, 1, 0, 0, 100)
	sale["door"] = map[string]any{"block_lists": []string{"resellers"}}
	nodetest.CreateSale(t, n, "keep", sale)
	join := func() nodetest.Answer {
		return nodetest.Call(t, http.MethodPost, n.URL()+"/events/keep/join", user("mallory"), nil)
	}
	nodetest.WaitFor(t, "mallory's join refused", 10*time.Second, func() bool { return join().Status == http.StatusForbidden })

	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	put := func(body string) nodetest.Answer {
		return nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/keep", admin, []byte(body))
	}
	if a := put(`{"door": {"block_lists": []}, "mode": "lottery"}`); a.Status != http.StatusConflict {
		t.Fatalf("a locked save: %d %s, want 409", a.Status, a.Raw)
	}
	if a := join(); a.Status != http.StatusForbidden || nodetest.Str(a.Body, "code") != "blocked" {
		t.Fatalf("mallory's join after the refused save: %d %s, want 403 blocked", a.Status, a.Raw)
	}
	if a := put(`{"door": {"block_lists": []}}`); a.Status != http.StatusOK {
		t.Fatalf("the list's removal: %d %s", a.Status, a.Raw)
	}
	nodetest.WaitFor(t, "mallory's join taken", 10*time.Second, func() bool { return join().Status == http.StatusOK })
	if err := n.Lists.Delete(ctx, "resellers"); err != nil {
		t.Fatalf("delete the list no sale names now: %v", err)
	}
}
