package e2e

import (
	"net/http"
	"testing"
	"time"
)

func TestTmpWindow(t *testing.T) {
	n := startNode(t)
	createSale(t, n, "drop", sale{supply: 5, opensIn: -1 * time.Second, startsIn: 1 * time.Second, window: 2, rate: 50})
	base := n.URL() + "/events/drop"
	j := call(t, http.MethodPost, base+"/join", map[string]string{"X-User-ID": "u1"}, nil)
	t.Logf("join %d %s", j.status, j.raw)
	for i := 0; i < 12; i++ {
		s := call(t, http.MethodGet, base+"/status", map[string]string{"Authorization": "Bearer " + str(j.body, "ticket")}, nil)
		e := call(t, http.MethodGet, base, nil, nil)
		t.Logf("%d status %s | event %s", i, s.raw, e.raw)
		time.Sleep(500 * time.Millisecond)
	}
}
