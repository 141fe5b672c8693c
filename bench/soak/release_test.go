//go:build soak && linux

package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// staffRelease is staff (the admin token) releasing a shopper's pending
// claim of the current sale, as an operator does for a customer who asks:
// recorded as the shopper's release (the history and the model hold it to
// the same promises), and every one answered 200 must be in the audit
// trail (checkStaffAudit).
func staffRelease(ctx context.Context, f *faults, rnd *rand.Rand) error {
	return releaseByStaff(ctx, f, rnd, time.Now().Add(-3*time.Second))
}

// releaseByStaff is staffRelease of a claim granted since since if there
// is one, else of any live claim.
func releaseByStaff(ctx context.Context, f *faults, rnd *rand.Rand, since time.Time) error {
	ev := f.sales.current()
	id, user := f.h.pickLive(ev, rnd, since)
	if id == "" {
		return nil
	}
	i := rnd.IntN(nodes)
	path := "/events/" + ev + "/claims/" + id + "/release"
	o := op{Sale: ev, User: user, Kind: "release", Node: strconv.Itoa(i), ClaimID: id, Note: "by staff", Start: time.Now()}
	status, raw, retry := adminPost(ctx, f.s.base(i)+path, f.s.dp.Admin)
	o.At = time.Now()
	if status == 0 {
		o.Err = "unreachable" // the model takes it as a release that may have happened
	} else {
		o.Status, o.Retry = status, retry
		var p struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(raw, &p)
		o.Code = p.Code
	}
	f.h.record(o)
	if status == http.StatusOK {
		f.h.mu.Lock()
		f.h.staffReleases[ev] = append(f.h.staffReleases[ev], o)
		f.h.mu.Unlock()
	}
	return nil
}

// pickLive draws a claim of sale ev granted and neither released nor seen
// confirmed, and its user; "" when there is none. The claims answered
// since since come first: the order worker soon confirms the others, and
// a confirmed claim cannot be released.
func (h *history) pickLive(ev string, rnd *rand.Rand, since time.Time) (id, user string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.sales[ev]
	if b == nil {
		return "", ""
	}
	var ids, recent []string
	for id := range b.live {
		if _, cancelled := b.cancelled[id]; !b.confirmed[id] && !cancelled {
			ids = append(ids, id)
			if b.grantAt[id].After(since) {
				recent = append(recent, id)
			}
		}
	}
	if len(recent) > 0 {
		ids = recent
	}
	if len(ids) == 0 {
		return "", ""
	}
	slices.Sort(ids)
	id = ids[rnd.IntN(len(ids))]
	return id, b.live[id]
}

// checkStaffAudit checks that every staff release and cancellation of
// sale ev answered 200 is in the audit trail (issue 34, item 7; issue 36):
// an entry of the sale naming the claim. A promotion since the release may have lost the entry with
// the rest of those moments' writes: such a release is counted, not held.
func (ss *sales) checkStaffAudit(ctx context.Context, ev string) {
	h := ss.h
	h.mu.Lock()
	rel := slices.Clone(h.staffReleases[ev])
	nrel := len(rel)
	rel = append(rel, h.staffCancels[ev]...)
	h.mu.Unlock()
	if len(rel) == 0 {
		return
	}
	var entries []json.RawMessage
	var err error
	for try := 0; try < 30; try++ {
		status, raw := ss.s.dp.AdminCall(ss.s.base(try), http.MethodGet, "/admin/audit?event="+ev, nil)
		var v struct {
			Entries []json.RawMessage `json:"entries"`
		}
		if status == http.StatusOK && json.Unmarshal(raw, &v) == nil {
			entries, err = v.Entries, nil
			break
		}
		err = fmt.Errorf("GET /admin/audit: %d %s", status, raw)
		time.Sleep(time.Second)
	}
	if err != nil {
		h.violateNow(ev, "audit trail unreadable for 30 s: %v", err)
		return
	}
	named := map[string]bool{}
	for _, e := range entries {
		for _, o := range rel {
			if q, _ := json.Marshal(o.ClaimID); bytes.Contains(e, q) {
				named[o.ClaimID] = true
			}
		}
	}
	lost := 0
	for _, o := range rel {
		ss.checks.Add(1)
		if named[o.ClaimID] {
			continue
		}
		h.mu.Lock()
		promoted := h.promotedBetween(o.Start, time.Now())
		h.mu.Unlock()
		if promoted {
			lost++
			continue
		}
		h.violateNow(ev, "staff %s claim %s of %s (200 at %s) and the audit trail has no entry for it", map[string]string{"release": "released", "cancel": "cancelled"}[o.Kind], o.ClaimID, o.User, o.At.Format("15:04:05.000"))
		return
	}
	h.note("audit", "sale %s: %d claims released and %d cancelled by staff, each in the audit trail (%d lost with a failover's writes)", ev, nrel, len(rel)-nrel, lost)
}

// adminPost sends POST url with the admin token and returns the status
// (0 when no answer came), the body and whether Retry-After came: the
// history's 5xx check needs the header, which AdminCall does not give.
func adminPost(ctx context.Context, url, token string) (int, []byte, bool) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, url, nil)
	if err != nil {
		return 0, nil, false
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := adminClient.Do(req)
	if err != nil {
		return 0, nil, false
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, raw, resp.Header.Get("Retry-After") != ""
}
