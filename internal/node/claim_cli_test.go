package node_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestWorkerAndReconcileCommands runs `anteroom worker` beside a node, as
// an operator would, until it has confirmed every claim and stops on
// SIGTERM; then `anteroom reconcile --event` rebuilds the sale from the
// stream with the same ANTEROOM_* configuration and prints its report.
func TestWorkerAndReconcileCommands(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	sale := openSale(10, 1, 0, 0, 1000)
	sale["buckets"] = 2
	nodetest.CreateSale(t, n, "cli", sale)
	var ids []string
	for _, u := range []string{"ann", "ben", "cat"} {
		a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/cli/claim",
			map[string]string{"X-User-ID": u, "Authorization": "Bearer " + nodetest.AdmitUser(t, n, "cli", u)}, nil)
		if a.Status != http.StatusCreated {
			t.Fatalf("claim %s: %d %s", u, a.Status, a.Raw)
		}
		ids = append(ids, nodetest.Str(a.Body, "claim_id"))
	}
	bin := buildAnteroom(t)
	env := append(os.Environ(), "ANTEROOM_REDIS_URL="+r.URL(), "ANTEROOM_NATS_URL="+ns.URL(),
		"ANTEROOM_DATA_DIR="+t.TempDir(), "ANTEROOM_SIGNING_KEYS=", "ANTEROOM_LOG_FORMAT=text")

	worker := exec.Command(bin, "worker")
	worker.Env = env
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- worker.Wait() }()
	t.Cleanup(func() { _ = worker.Process.Kill() })
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	nodetest.WaitFor(t, "anteroom worker to confirm every claim", 20*time.Second, func() bool {
		for _, id := range ids {
			if nodetest.Str(nodetest.Call(t, http.MethodGet, n.URL()+"/events/cli/claims/"+id, admin, nil).Body, "status") != "confirmed" {
				return false
			}
		}
		return true
	})
	if err := worker.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("anteroom worker exited with %v on SIGTERM, want 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("anteroom worker did not stop on SIGTERM")
	}

	rec := exec.Command(bin, "reconcile", "--event", "cli")
	rec.Env = env
	out, err := rec.Output()
	if err != nil {
		t.Fatalf("anteroom reconcile: %v", err)
	}
	var rep struct {
		Granted, Confirmed int
		Available          int64
	}
	if err := json.Unmarshal(out, &rep); err != nil || rep.Granted != 3 || rep.Confirmed != 3 || rep.Available != 7 {
		t.Errorf("reconcile report %s (%v), want 3 granted and confirmed, 7 available", out, err)
	}
	for _, id := range ids {
		if s := nodetest.Str(nodetest.Call(t, http.MethodGet, n.URL()+"/events/cli/claims/"+id, admin, nil).Body, "status"); s != "confirmed" {
			t.Errorf("claim %s is %q after the rebuild, want confirmed", id, s)
		}
	}
	bad := exec.Command(bin, "reconcile")
	bad.Env = env
	if err := bad.Run(); err == nil {
		t.Error("anteroom reconcile without --event succeeded")
	}
}
