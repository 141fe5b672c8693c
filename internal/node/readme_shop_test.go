package node_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/lifecycle"
)

// readmeBlock returns the fenced block that follows
// "<!-- readme-test: name -->" in README.md or one of docs/*.md (exactly
// one of them holds it).
func readmeBlock(t *testing.T, name string) string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var block, in string
	for _, f := range append([]string{"../../README.md"}, files...) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(string(raw), "<!-- readme-test: "+name+" -->\n```")
		if !ok {
			continue
		}
		if in != "" {
			t.Fatalf("block %q is in %s and in %s", name, in, f)
		}
		_, rest, _ = strings.Cut(rest, "\n") // the language tag
		b, _, ok := strings.Cut(rest, "\n```")
		if !ok {
			t.Fatalf("%s: block %q is not closed", f, name)
		}
		block, in = b, f
	}
	if in == "" {
		t.Fatalf("neither README.md nor docs/*.md has a block %q", name)
	}
	return block
}

// TestReadmeShopIntegration runs docs/integrate.md's "Integrate with your shop"
// as written: its webhook configuration, pointed at a loopback receiver,
// brings a your_turn for an admitted user, and its Node.js and shell
// verifiers accept the delivered request and refuse a tampered one.
func TestReadmeShopIntegration(t *testing.T) {
	for _, bin := range []string{"node", "openssl", "bash"} {
		testenv.Binary(t, bin) // fails under CI=true when missing
	}
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), WebhookAllowHTTP: true}))
	var mu sync.Mutex
	var body []byte
	var sig string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == "/anteroom/hooks" && r.Header.Get(lifecycle.EventTypeHeader) == "your_turn" && body == nil {
			body, sig = b, r.Header.Get(lifecycle.SignatureHeader)
		}
	}))
	t.Cleanup(srv.Close)

	nodetest.CreateSale(t, n, "readme", openSale(10, 1, 0, 0, 1000))
	conf := strings.Replace(readmeBlock(t, "webhooks"), "https://shop.example", srv.URL, 1)
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/readme", admin, []byte(conf)); a.Status != http.StatusOK {
		t.Fatalf("README webhooks: %d %s", a.Status, a.Raw)
	}
	nodetest.WaitFor(t, "the node to see the webhook", 10*time.Second, func() bool {
		s, ok := n.Snapshots.Get("readme")
		return ok && s.Config.WantsYourTurn()
	})
	if j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/readme/join", map[string]string{"X-User-ID": "shopper-42"}, nil); j.Status != http.StatusOK {
		t.Fatalf("join: %d %s", j.Status, j.Raw)
	}
	nodetest.WaitFor(t, "your_turn at the docs' URL", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return body != nil
	})
	if !strings.Contains(string(body), `"user":"shopper-42"`) {
		t.Errorf("your_turn body %s does not name shopper-42", body)
	}
	secret := "whsec-change-me-to-32-random-chars"
	dir := t.TempDir()
	verify := filepath.Join(dir, "verify.mjs")
	run := filepath.Join(dir, "run.mjs")
	script := filepath.Join(dir, "verify.sh")
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(verify, readmeBlock(t, "verify-node"))
	write(run, `import { readFileSync } from "node:fs";
import { verifyAnteroom } from "./verify.mjs";
console.log(verifyAnteroom(process.env.SIG, readFileSync("body.json"), process.env.SECRET) ? "valid" : "invalid");
`)
	write(script, readmeBlock(t, "verify-sh"))
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{{"delivered", body, "valid"}, {"tampered", []byte(strings.Replace(string(body), "shopper-42", "shopper-43", 1)), "invalid"}} {
		write(filepath.Join(dir, "body.json"), string(tc.body))
		for _, cmd := range [][]string{{"node", run}, {"bash", script}} {
			c := exec.Command(cmd[0], cmd[1:]...)
			c.Dir, c.Env = dir, append(os.Environ(), "SIG="+sig, "SECRET="+secret)
			out, err := c.CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != tc.want {
				t.Errorf("%s with %s: %q (%v), want %s", cmd[0], tc.name, out, err, tc.want)
			}
		}
	}
}
