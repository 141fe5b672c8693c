//go:build soak && linux

package soak

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/FastFilter/xorfilter"
	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/anteroom/anteroom/tokens"
)

// The door in the soak (issue 35, item 7). At the run's start staff
// create the block list blockList through the admin API and load it with
// the ids of the people the crowd will send blocked (blk1, blk2, ...). A
// sale whose plan has a door names it (block_lists) and sinks the bots
// by a rule on their user agent; a sale with an eligibility list gets its
// own ("<sale>.eligible"), loaded before the sale is saved with the ids
// its members will use (m1, m2, ...). The soak reads that list back
// (its export: the keyed hashes in the order every node builds its
// filter from) and builds the same binary fuse filter a node builds, to
// find ids off the list that the filter takes for members: those are
// sent too, and the join's exact check must refuse them like anyone off
// the list. During the sale staff change the door (plan.change): people
// who joined are added to the block list one by one
// (PUT /admin/lists/{name}/entries/{id}), or the door is saved again
// with a rule that sinks one cohort of the crowd (a header every JSON
// shopper sends). doorbook_test.go holds the checks.

const (
	// blockList is the run's block list.
	blockList = "soak-blocked"
	// blockedPool is how many ids the block list holds from the start.
	blockedPool = 500
	// memberPool is how many ids a sale's eligibility list holds: more
	// than its crowd can use (6 a second for at most 150 s and the lead).
	memberPool = 1500
	// falsePositives is how many ids off an eligibility list that its
	// filter takes for members the soak looks for and sends.
	falsePositives = 6
	// botAgent is the bots' user agent, which the sale's rule sinks.
	botAgent = "soakbot/1.0 (+https://anteroom.invalid/soak)"
	// cohortHeader carries a JSON shopper's cohort (c0 … c9), which a
	// rule added during the sale may sink.
	cohortHeader = "X-Soak-Cohort"
	cohorts      = 10
	// falsePositiveNote marks the ops of an id off the eligibility list
	// that the nodes' filter takes for a member.
	falsePositiveNote = "filter false positive"
)

// Shares of a door sale's arrivals.
const (
	blockedShare = 0.04
	botShare     = 0.05
	offListShare = 0.25 // in a sale with an eligibility list
	lingerShare  = 0.15 // of the buyers (not blocked, bots or off the list), in a sale whose door changes
)

// saleDoor is a sale's door as the soak set it up.
type saleDoor struct {
	eligible string // the eligibility list, "" for none
	// memberBase is the member ids' first number - 1; members counts
	// those sent so far.
	memberBase, members int
	// offList are ids off the list its filter takes for members; sent
	// counts those sent.
	offList []string
	sent    int
}

// rules are the door's rules: the bots' sink and, once staff sank one,
// the cohort's.
func doorRules(cohort string) []map[string]any {
	r := []map[string]any{{"name": "bots", "when": `request.headers["user-agent"].startsWith("soakbot/")`, "then": "sink"}}
	if cohort != "" {
		r = append(r, map[string]any{"name": "late-cohort", "when": fmt.Sprintf(`request.headers[%q] == %q`, strings.ToLower(cohortHeader), cohort), "then": "sink"})
	}
	return r
}

// door is the sale configuration's door.
func (sd *saleDoor) door(cohort string) map[string]any {
	d := map[string]any{"block_lists": []string{blockList}, "rules": doorRules(cohort)}
	if sd.eligible != "" {
		d["eligible_lists"] = []string{sd.eligible}
		d["not_eligible_message"] = "This sale is for our registered members."
	}
	return d
}

// listCall sends an admin request about lists until a node answers it
// with something other than a 5xx (or nothing), at most 30 times, and
// returns the answer and when it came. contentType "" sends JSON.
func (ss *sales) listCall(ctx context.Context, method, path string, body []byte, contentType string) (int, []byte, time.Time) {
	for try := 0; ; try++ {
		status, raw := ss.adminCall(ss.s.base(try), method, path, body, contentType)
		at := time.Now()
		ss.h.note("staff", "%s %s (%d bytes) → %d (node %d)", method, path, len(body), status, try%nodes)
		if status != 0 && status < 500 || try >= 30 || !wait.Sleep(ctx, 500*time.Millisecond) {
			return status, raw, at
		}
	}
}

// adminCall is testenv's AdminCall with a content type of one's own.
func (ss *sales) adminCall(base, method, path string, body []byte, contentType string) (int, []byte) {
	if contentType == "" {
		return ss.s.dp.AdminCall(base, method, path, body)
	}
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		return 0, []byte(err.Error())
	}
	req.Header.Set("Authorization", "Bearer "+ss.s.dp.Admin)
	req.Header.Set("Content-Type", contentType)
	resp, err := adminClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp.StatusCode, out.Bytes()
}

// loadList creates list name (if need be) and loads it with ids,
// replacing what it held, and returns when the load was answered.
func (ss *sales) loadList(ctx context.Context, name string, ids []string) (time.Time, error) {
	status, raw, _ := ss.listCall(ctx, http.MethodPut, "/admin/lists/"+name, []byte(`{"kind":"user"}`), "")
	if status != http.StatusCreated && status != http.StatusConflict { // 409: a retry's first try took
		return time.Time{}, fmt.Errorf("create list %s: %d %s", name, status, raw)
	}
	csv := "user_id\n" + strings.Join(ids, "\n") + "\n"
	status, raw, at := ss.listCall(ctx, http.MethodPost, "/admin/lists/"+name+"/entries?mode=replace&format=csv", []byte(csv), "text/csv")
	if status != http.StatusOK {
		return time.Time{}, fmt.Errorf("load list %s: %d %s", name, status, raw)
	}
	var v struct {
		List lists.Meta `json:"list"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || v.List.Count != int64(len(ids)) {
		return time.Time{}, fmt.Errorf("load list %s: %s, want %d entries", name, raw, len(ids))
	}
	return at, nil
}

// setupDoor creates the run's block list, before any sale names it.
func (ss *sales) setupDoor(ctx context.Context) error {
	ids := make([]string, blockedPool)
	for i := range ids {
		ids[i] = "blk" + strconv.Itoa(i+1)
	}
	at, err := ss.loadList(ctx, blockList, ids)
	ss.mu.Lock()
	ss.blockedAt = at
	ss.mu.Unlock()
	return err
}

// prepareDoor sets up sale ev's door by its plan before the sale is
// saved: its eligibility list (loaded with the next memberPool member
// ids) and the ids off it its filter takes for members.
func (ss *sales) prepareDoor(ctx context.Context, ev string, members int) (*saleDoor, time.Time, error) {
	sd := &saleDoor{memberBase: members}
	ids := make([]string, memberPool)
	for i := range ids {
		ids[i] = "m" + strconv.Itoa(members+i+1)
	}
	sd.eligible = ev + ".eligible"
	at, err := ss.loadList(ctx, sd.eligible, ids)
	if err != nil {
		return nil, at, err
	}
	sd.offList, err = ss.falsePositives(ctx, ev, sd.eligible)
	return sd, at, err
}

// falsePositives reads list name back and finds ids off it that the
// nodes' filter of it takes for members (offList).
func (ss *sales) falsePositives(ctx context.Context, ev, name string) ([]string, error) {
	status, raw := ss.s.dp.AdminCall(ss.s.base(0), http.MethodGet, "/admin/lists/"+name+"/entries", nil)
	if status != http.StatusOK {
		return nil, fmt.Errorf("export %s: %d %.200s", name, status, raw)
	}
	store := lists.NewStore(ss.s.redis())
	if err := store.Init(ctx); err != nil {
		return nil, err
	}
	out, n, err := offList(raw, store.Hash, "x"+ev+"-")
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", name, err)
	}
	ss.h.note("staff", "list %s: %d entries read back; %d ids off it its filter takes for members: %s", name, n, len(out), strings.Join(out, " "))
	return out, nil
}

// offList finds up to falsePositives ids (prefix and a number) that a
// list's filter on a node takes for members though they are not on it,
// from the list's export (its keyed hashes in hex, one a line, in the
// order a node's lists.Set reads them) and hash, the deployment's keyed
// hash: the filter is the same library's over the same keys in the same
// order, so it is the nodes' (TestOffListIsTheNodesFilter). It returns
// them and how many entries the export held.
func offList(export []byte, hash func(string) uint64, prefix string) ([]string, int, error) {
	var keys []uint64
	sc := bufio.NewScanner(bytes.NewReader(export))
	for sc.Scan() {
		k, err := strconv.ParseUint(sc.Text(), 16, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("export line %q: %v", sc.Text(), err)
		}
		keys = append(keys, k)
	}
	filter, err := xorfilter.NewBinaryFuse[uint16](keys)
	if err != nil {
		return nil, 0, err
	}
	on := make(map[uint64]bool, len(keys))
	for _, k := range keys {
		on[k] = true
	}
	var out []string
	for i := 0; len(out) < falsePositives && i < 5_000_000; i++ {
		id := prefix + strconv.Itoa(i)
		if h := hash(id); filter.Contains(h) && !on[h] {
			out = append(out, id)
		}
	}
	return out, len(keys), nil
}

// changeDoor is staff's door change during sale ev (plan.change), at
// changeAt after the start (or, to block, once someone admitted has not
// claimed yet, at most 15 s later): people who joined added to the block
// list one by one, and/or a rule that sinks a cohort drawn from rnd.
func (ss *sales) changeDoor(ctx context.Context, ev string, rnd *rand.Rand) {
	st := ss.state(ev)
	if st == nil || st.door == nil || st.plan.change == "" {
		return
	}
	cohort := fmt.Sprintf("c%d", rnd.IntN(cohorts))
	ss.mu.Lock()
	at := st.start.Add(st.plan.changeAt)
	ss.mu.Unlock()
	if !wait.Sleep(ctx, time.Until(at)) {
		return
	}
	if ch := st.plan.change; ch == "block" || ch == "both" {
		// Someone admitted who has not claimed yet (a lingerer) is the
		// change's best target: wait up to 15 s for one.
		for until := time.Now().Add(15 * time.Second); time.Now().Before(until); {
			if admitted, _ := ss.h.blockPools(ev); len(admitted) > 0 || !wait.Sleep(ctx, 250*time.Millisecond) {
				break
			}
		}
		targets, admitted, waiting := ss.h.blockTargets(ev, rnd)
		ss.h.note("staff", "sale %s: door change: block %v (of %d admitted who have not claimed, %d waiting)", ev, targets, admitted, waiting)
		for _, u := range targets {
			status, raw, at := ss.listCall(ctx, http.MethodPut, "/admin/lists/"+blockList+"/entries/"+u, nil, "")
			if status != http.StatusOK {
				ss.h.violateNow(ev, "staff could not add %s to the block list: %d %s", u, status, raw)
				return
			}
			ss.h.changedDoor(ev, doorChange{what: "block", at: at, users: map[string]bool{u: true}})
		}
	}
	if ch := st.plan.change; ch == "sink" || ch == "both" {
		body, _ := json.Marshal(map[string]any{"door": st.door.door(cohort)})
		ss.h.sinkSent(ev, cohort, time.Now())
		for try := 0; ctx.Err() == nil; try++ {
			i := rnd.IntN(nodes)
			status, raw := ss.s.dp.AdminCall(ss.s.base(i), http.MethodPut, "/admin/events/"+ev, body)
			at := time.Now()
			ss.h.note("staff", "door of %s: sink cohort %s: PUT %s → %d %.200s (node %d)", ev, cohort, body, status, raw, i)
			if status == http.StatusOK {
				ss.h.note("staff", "sale %s: door change: a rule sinks cohort %s (node %d answered)", ev, cohort, i)
				ss.h.changedDoor(ev, doorChange{what: "sink", node: strconv.Itoa(i), at: at, cohort: cohort})
				return
			}
			if status != 0 && status < 500 || try >= 30 {
				ss.h.violateNow(ev, "staff could not save the door of %s: %d %s", ev, status, raw)
				return
			}
			wait.Sleep(ctx, 500*time.Millisecond) // 503 not_replicated: saved, not answered; send it again
		}
	}
}

// standAtDoor draws shopper s's standing at sale st's door: blocked, a
// bot, off the eligibility list, or (in a sale with one) a member, and
// the cohort a JSON shopper sends. It replaces s.id for all but those
// off the list who are not a false positive (the crowd numbers them).
func (c *crowd) standAtDoor(s *shopper, st *saleState, rnd *rand.Rand) {
	if st == nil || st.door == nil {
		return
	}
	sd := st.door
	switch r := rnd.Float64(); {
	case r < blockedShare && c.blocked < blockedPool:
		c.blocked++
		s.id, s.door = "blk"+strconv.Itoa(c.blocked), "blocked"
	case r < blockedShare+botShare:
		c.bots++
		s.id, s.door = "bot"+strconv.Itoa(c.bots), "bot"
		s.patience = dur(s.rnd, 15*time.Second, 40*time.Second)
	case sd.eligible != "" && (r < blockedShare+botShare+offListShare || sd.members >= memberPool):
		s.door = "offlist"
		if sd.sent < len(sd.offList) {
			s.id, s.fp = sd.offList[sd.sent], true
			sd.sent++
		}
	case sd.eligible != "":
		sd.members++
		s.id, s.door = "m"+strconv.Itoa(sd.memberBase+sd.members), "member"
	}
	s.cohort = fmt.Sprintf("c%d", rnd.IntN(cohorts))
	if (s.door == "" || s.door == "member") && st.plan.change != "" && rnd.Float64() < lingerShare {
		s.linger = dur(s.rnd, 4*time.Second, 12*time.Second)
	}
}

// doorHeaders are the headers that set s apart at the door.
func doorHeaders(s *shopper) map[string]string {
	h := map[string]string{}
	if s.cohort != "" {
		h[cohortHeader] = s.cohort
	}
	if s.door == "bot" {
		h["User-Agent"] = botAgent
	}
	return h
}

// pollBlocked is a blocked shopper's polls after the join refused them:
// with a ticket signed as if they had joined before the list named them
// (the deployment's secret), at a place the frontier has passed, which
// the door must refuse at every poll.
func (c *crowd) pollBlocked(ctx context.Context, s *shopper) {
	ticket, err := c.tickets.Sign(tokens.Ticket{Event: s.sale, User: s.id, Seq: 1 + s.rnd.Int64N(20), IssuedAt: time.Now().Add(-time.Minute)})
	if err != nil {
		c.h.violateNow(s.sale, "sign a ticket: %v", err)
		return
	}
	auth := map[string]string{"Authorization": "Bearer " + ticket}
	for range 3 {
		a := c.do(ctx, s, "status", http.MethodGet, "/events/"+s.sale+"/status", auth)
		if a.Status == http.StatusOK && a.State == "admitted" {
			// The checks stopped the run; a claim would be refused too.
			return
		}
		if !wait.Sleep(ctx, time.Second) {
			return
		}
	}
}
