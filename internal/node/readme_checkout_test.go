package node_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestReadmeCheckoutCapacity runs docs/integrate.md's "Admission by checkout
// capacity" as written: its configuration (pointed at a loopback health
// endpoint, max_active lowered to 1), its shell and Node.js calls that
// finish a session — each admits the next shopper — and its shell health
// push.
func TestReadmeCheckoutCapacity(t *testing.T) {
	for _, bin := range []string{"node", "openssl", "bash", "curl"} {
		testenv.Binary(t, bin) // fails under CI=true when missing
	}
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), WebhookAllowHTTP: true}))
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	sale := openSale(100, 1, 0, 0, 1000)
	sale["no_show_grace_seconds"] = 60
	nodetest.CreateSale(t, n, "readme", sale)
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	conf := strings.Replace(readmeBlock(t, "checkout-config"), "https://shop.example", srv.URL, 1)
	for _, body := range []string{conf, `{"max_active": 1}`} {
		if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/readme", admin, []byte(body)); a.Status != http.StatusOK {
			t.Fatalf("README configuration: %d %s", a.Status, a.Raw)
		} else if strings.Contains(string(a.Raw), "shopsec-change-me") {
			t.Fatal("the admin API returned the shop secret")
		}
	}
	tickets := map[string]string{}
	for _, u := range []string{"r1", "r2", "r3"} {
		j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/readme/join", map[string]string{"X-User-ID": u}, nil)
		if j.Status != http.StatusOK {
			t.Fatalf("join: %d %s", j.Status, j.Raw)
		}
		tickets[u] = nodetest.Str(j.Body, "ticket")
	}
	// next waits for the one person in checkout and returns their jti.
	done := map[string]bool{}
	next := func() (string, string) {
		var who, jti string
		nodetest.WaitFor(t, "one person in checkout", 10*time.Second, func() bool {
			who, jti = "", ""
			for u, ticket := range tickets {
				if done[u] {
					continue
				}
				s := nodetest.Call(t, http.MethodGet, n.URL()+"/events/readme/status", map[string]string{"Authorization": "Bearer " + ticket}, nil)
				if tok := nodetest.Str(s.Body, "admission_token"); tok != "" {
					if who != "" {
						t.Fatalf("%s and %s in checkout at once, max_active 1", who, u)
					}
					who, jti = u, nodetest.Str(payloadOf(t, tok), "jti")
				}
			}
			return who != ""
		})
		afterTick(t, n, "readme") // the jti is known from the node's next tick
		return who, jti
	}
	dir := t.TempDir()
	write := func(name, s string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	finishSh := write("finish.sh", readmeBlock(t, "finish-sh"))
	healthSh := write("health.sh", readmeBlock(t, "health-sh"))
	write("finish.mjs", readmeBlock(t, "finish-node"))
	finishNode := write("run.mjs", `import { finishSession } from "./finish.mjs";
console.log(JSON.stringify(await finishSession(process.env.ANTEROOM, process.env.SALE, process.env.JTI, process.env.SECRET)));
`)
	run := func(jti string, cmd ...string) string {
		t.Helper()
		c := exec.Command(cmd[0], cmd[1:]...)
		c.Dir = dir
		c.Env = append(os.Environ(), "ANTEROOM="+n.URL(), "SALE=readme", "JTI="+jti, "SECRET=shopsec-change-me-to-32-random-chars")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", cmd, err, out)
		}
		return string(out)
	}
	who, jti := next()
	if out := run(jti, "bash", finishSh); !strings.Contains(out, `"finished":true`) || !strings.Contains(out, `"replay":false`) {
		t.Fatalf("README shell finish: %s", out)
	}
	done[who] = true
	who, jti = next()
	if out := run(jti, "node", finishNode); !strings.Contains(out, `"finished":true`) {
		t.Fatalf("README Node.js finish: %s", out)
	}
	done[who] = true
	next() // the third shopper is admitted in turn
	if out := run("", "bash", healthSh); !strings.Contains(out, `"healthy":true`) {
		t.Fatalf("README health push: %s", out)
	}
}
