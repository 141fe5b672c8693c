package main

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/tokens"
)

// TestVerifyLaneOnNode runs a sale with an early lane on a node (real
// redis-server and NATS): the public event JSON lists the lane with its
// frozen window size once it starts, and `anteroom verify --event` given
// that JSON and each ticket's seq computes the very position status
// answers, for lane members in and after the lane's window and for the
// default lane.
func TestVerifyLaneOnNode(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TicketSecret: secret}))
	now := time.Now().UTC().Truncate(time.Second)
	sale, _ := json.Marshal(map[string]any{"name": "members first", "supply": 100, "per_user_limit": 1,
		"prequeue_opens_at": now.Add(-time.Second), "starts_at": now.Add(4 * time.Second), "ends_at": now.Add(time.Hour),
		"admit_rate_per_second": 2, "limits": map[string]any{"join": map[string]any{"ip": map[string]any{"per_second": -1}}},
		"lanes": []any{map[string]any{"name": "members", "share": 0.5, "starts_at": now.Add(3 * time.Second)}}})
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/early", map[string]string{"Authorization": "Bearer " + n.AdminToken}, sale); a.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.Status, a.Raw)
	}
	inv, _ := tokens.NewInvites(secret)
	seqs := map[string]int64{} // ticket -> seq
	join := func(user string, lane bool) {
		h := map[string]string{"X-User-ID": user}
		if lane {
			h["X-Invite-Token"] = inv.SignLane("early", user, "members", now.Add(time.Hour))
		}
		j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/early/join", h, nil)
		if j.Status != http.StatusOK || (j.Body["lane"] == "members") != lane {
			t.Fatalf("join %s: %d %s", user, j.Status, j.Raw)
		}
		seqs[j.Body["ticket"].(string)] = int64(j.Body["seq"].(float64))
	}
	for i := range 6 {
		join(fmt.Sprint("m", i), true)
	}
	for i := range 4 {
		join(fmt.Sprint("d", i), false)
	}
	var pub nodetest.Answer
	deadline := time.Now().Add(15 * time.Second)
	for {
		pub = nodetest.Call(t, http.MethodGet, n.URL()+"/events/early", nil, nil)
		if pub.Body["seed"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sale's window did not close: %s", pub.Raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var lanes struct {
		Lanes []struct {
			Name       string    `json:"name"`
			StartsAt   time.Time `json:"starts_at"`
			WindowSize *int64    `json:"window_size"`
		} `json:"lanes"`
	}
	if err := json.Unmarshal(pub.Raw, &lanes); err != nil || len(lanes.Lanes) != 1 || lanes.Lanes[0].Name != "members" ||
		!lanes.Lanes[0].StartsAt.Equal(now.Add(3*time.Second)) || lanes.Lanes[0].WindowSize == nil {
		t.Fatalf("the event JSON lists no lane with its window size: %s", pub.Raw)
	}
	if w := *lanes.Lanes[0].WindowSize; w < 1 || w > 6 {
		t.Fatalf("the lane's window size is %d, want 1..6 (the members who joined before its start)", w)
	}
	join("m-late", true) // after the lane's window: position = its number
	ev := writeEvent(t, json.RawMessage(pub.Raw))
	posRe := regexp.MustCompile(`position (\d+)\n$`)
	for ticket, seq := range seqs {
		var got float64
		deadline := time.Now().Add(10 * time.Second)
		for {
			s := nodetest.Call(t, http.MethodGet, n.URL()+"/events/early/status", map[string]string{"Authorization": "Bearer " + ticket}, nil)
			p, ok := s.Body["position"].(float64)
			if ok {
				got = p
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("seq %d: no position: %s", seq, s.Raw)
			}
			time.Sleep(20 * time.Millisecond)
		}
		out, err := runVerify(t, "--event", ev, "--seq", strconv.FormatInt(seq, 10))
		if err != nil {
			t.Fatalf("verify seq %d: %v", seq, err)
		}
		m := posRe.FindStringSubmatch(out)
		if m == nil || m[1] != strconv.FormatInt(int64(got), 10) {
			t.Errorf("seq %d (lane %d): status answers position %v, verify: %q", seq, seq>>40, got, out)
		}
		if lane, num := queue.Unlane(seq); lane == 1 {
			out, err := runVerify(t, "--event", ev, "--lane", "members", "--seq", strconv.FormatInt(num, 10))
			if err != nil || !posRe.MatchString(out) || posRe.FindStringSubmatch(out)[1] != m[1] {
				t.Errorf("verify --lane members --seq %d: %q %v, want the position of seq %d", num, out, err, seq)
			}
		}
	}
}
