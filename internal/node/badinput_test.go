package node_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestBadInput sends malformed, unauthenticated, forged and oversized
// requests: each gets a problem+json answer with the contract's status and
// code, and none changes any state.
func TestBadInput(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "good", openSale(5, 1, 0, 0, 1000))
	nodetest.CreateSale(t, n, "other", openSale(5, 1, 0, 0, 1000))
	later := openSale(5, 1, time.Hour, 0, 10)
	later["prequeue_opens_at"] = time.Now().Add(30 * time.Minute).UTC().Truncate(time.Second)
	later["ends_at"] = time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	nodetest.CreateSale(t, n, "later", later)

	// Credentials that are valid somewhere, to misuse.
	otherToken := nodetest.AdmitUser(t, n, "other", "carol")
	otherTicket := nodetest.Str(nodetest.Call(t, http.MethodPost, n.URL()+"/events/other/join", map[string]string{"X-User-ID": "carol"}, nil).Body, "ticket")
	goodTicket := nodetest.Str(nodetest.Call(t, http.MethodPost, n.URL()+"/events/good/join", map[string]string{"X-User-ID": "dave"}, nil).Body, "ticket")

	before := stateOf(t, n, r)
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	big := bytes.Repeat([]byte("x"), 17*1024)
	forged := goodTicket[:len(goodTicket)-4] + "AAAA"

	cases := []struct {
		name, method, path string
		hdr                map[string]string
		body               []byte
		status             int
		code               string
	}{
		{"admin malformed json", "PUT", "/admin/events/good", admin, []byte(`{"supply":`), 400, "bad_request"},
		{"admin unknown field", "PUT", "/admin/events/good", admin, []byte(`{"suply":3}`), 400, "bad_request"},
		{"admin wrong type", "PUT", "/admin/events/good", admin, []byte(`{"supply":"many"}`), 400, "bad_request"},
		{"admin invalid value", "PUT", "/admin/events/good", admin, []byte(`{"supply":-1}`), 400, "bad_request"},
		{"admin id mismatch", "PUT", "/admin/events/good", admin, []byte(`{"id":"evil"}`), 400, "bad_request"},
		{"admin bad id", "PUT", "/admin/events/BAD!", admin, []byte(`{}`), 400, "bad_request"},
		{"admin no token", "PUT", "/admin/events/good", nil, []byte(`{"supply":9}`), 401, "unauthenticated"},
		{"admin wrong token", "PUT", "/admin/events/good", map[string]string{"Authorization": "Bearer nope"}, []byte(`{"supply":9}`), 401, "unauthenticated"},
		{"admin oversized", "PUT", "/admin/events/good", admin, big, 413, "too_large"},
		{"unknown event", "GET", "/events/nosuch", nil, nil, 404, "unknown_event"},
		{"unknown event join", "POST", "/events/nosuch/join", map[string]string{"X-User-ID": "a"}, nil, 404, "unknown_event"},
		{"invalid event id", "GET", "/events/..%2f..", nil, nil, 404, "unknown_event"},
		{"join without identity", "POST", "/events/good/join", nil, nil, 401, "unauthenticated"},
		{"join with long identity", "POST", "/events/good/join", map[string]string{"X-User-ID": strings.Repeat("u", 200)}, nil, 401, "unauthenticated"},
		{"join oversized", "POST", "/events/good/join", map[string]string{"X-User-ID": "big"}, big, 413, "too_large"},
		{"join before opening", "POST", "/events/later/join", map[string]string{"X-User-ID": "early"}, nil, 403, "not_open"},
		{"status without ticket", "GET", "/events/good/status", nil, nil, 401, "unauthenticated"},
		{"status garbage ticket", "GET", "/events/good/status", map[string]string{"Authorization": "Bearer garbage"}, nil, 401, "unauthenticated"},
		{"status forged ticket", "GET", "/events/good/status", map[string]string{"Authorization": "Bearer " + forged}, nil, 401, "unauthenticated"},
		{"status garbage cookie", "GET", "/events/good/status", map[string]string{"Cookie": "anteroom_t_good=garbage"}, nil, 401, "unauthenticated"},
		{"status other event's ticket", "GET", "/events/good/status", map[string]string{"Authorization": "Bearer " + otherTicket}, nil, 403, "forbidden"},
		{"claim without token", "POST", "/events/good/claim", nil, nil, 401, "unauthenticated"},
		{"claim garbage token", "POST", "/events/good/claim", map[string]string{"Authorization": "Bearer a.b.c"}, nil, 401, "unauthenticated"},
		{"claim with a queue ticket", "POST", "/events/good/claim", map[string]string{"Authorization": "Bearer " + goodTicket}, nil, 401, "unauthenticated"},
		{"claim other event's token", "POST", "/events/good/claim", map[string]string{"Authorization": "Bearer " + otherToken}, nil, 403, "forbidden"},
		{"claim bad idempotency key", "POST", "/events/other/claim", map[string]string{"X-User-ID": "carol", "Authorization": "Bearer " + otherToken, "Idempotency-Key": "has space"}, nil, 400, "bad_request"},
		{"claim as another user", "POST", "/events/other/claim", map[string]string{"Authorization": "Bearer " + otherToken, "X-User-ID": "mallory"}, nil, 403, "forbidden"},
		{"claim lookup garbage id", "GET", "/events/good/claims/zzz", map[string]string{"X-User-ID": "dave"}, nil, 404, "not_found"},
		{"no such route", "GET", "/nothing", nil, nil, 404, "not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := nodetest.Call(t, tc.method, n.URL()+tc.path, tc.hdr, tc.body)
			if a.Status != tc.status || nodetest.Str(a.Body, "code") != tc.code {
				t.Fatalf("got %d %s, want %d %s", a.Status, a.Raw, tc.status, tc.code)
			}
			if ct := a.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
				t.Errorf("content type %q, want application/problem+json", ct)
			}
			if nodetest.Str(a.Body, "title") == "" || a.Body["status"] != float64(tc.status) {
				t.Errorf("problem lacks title or status: %s", a.Raw)
			}
		})
	}
	if after := stateOf(t, n, r); after != before {
		t.Errorf("state changed by bad input:\n got %+v\nwant %+v", after, before)
	}
}

type state struct {
	goodVersion, otherVersion float64
	goodSupply                float64
	joinedGood, joinedLater   string
	granted                   int64
}

func stateOf(t *testing.T, n *node.Node, r *testenv.Redis) state {
	t.Helper()
	ctx := context.Background()
	var s state
	for _, ev := range []string{"good", "other"} {
		a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/"+ev, map[string]string{"Authorization": "Bearer " + n.AdminToken}, nil)
		cfg, _ := a.Body["config"].(map[string]any)
		if ev == "good" {
			s.goodVersion, s.goodSupply = cfg["version"].(float64), cfg["supply"].(float64)
		} else {
			s.otherVersion = cfg["version"].(float64)
		}
	}
	rdb := r.Client(t)
	s.joinedGood, _ = rdb.Get(ctx, "ar:{good}:seq").Result()
	s.joinedLater, _ = rdb.Get(ctx, "ar:{later}:seq").Result()
	for _, ev := range []string{"good", "other"} {
		tot, err := n.Claims.Totals(ctx, claim.Sale{ID: ev, Buckets: 1})
		if err != nil {
			t.Fatal(err)
		}
		s.granted += tot.Granted
	}
	return s
}
