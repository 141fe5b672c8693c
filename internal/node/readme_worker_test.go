package node_test

import (
	"encoding/base64"
	"encoding/json"
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
	"github.com/anteroom/anteroom/tokens"
)

// workerRun calls the Worker's fetch handler once per token in tokens.json
// (a cookie, or a bearer for names starting with "bearer") for a protected
// shop URL, with a client-supplied X-User-ID, and prints each answer.
const workerRun = `import { readFileSync } from "node:fs";
import worker from "./worker.mjs";
const cases = JSON.parse(readFileSync("tokens.json", "utf8"));
const out = {};
for (const [name, tok] of Object.entries(cases)) {
  const headers = {"X-User-ID": "mallory"};
  if (name.startsWith("bearer")) headers.Authorization = "Bearer " + tok;
  else headers.Cookie = "lang=en; anteroom_a_spring-sale=" + tok;
  const r = await worker.fetch(new Request(process.env.SHOP + "/checkout/item?x=1&y=2", {headers}));
  out[name] = {status: r.status, location: r.headers.get("Location") || "", body: r.status === 200 ? await r.text() : ""};
}
console.log(JSON.stringify(out));
`

// TestReadmeEdgeWorker runs docs/integrate.md's edge function in Node against a
// live node: its JWKS fetched from the node, a token the node issued lets
// the request through to a stub shop with X-User-ID = the token's sub (the
// client's own X-User-ID overwritten), and forged, alg none, expired,
// other-event, other-audience and unknown-key tokens are sent to the
// waiting page with the URL as their return.
func TestReadmeEdgeWorker(t *testing.T) {
	nodeBin := testenv.Binary(t, "node")
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	keyDir := t.TempDir()
	const issuer = "https://queue.shop.example"
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), SigningKeys: keyDir, Issuer: issuer}))
	var mu sync.Mutex
	var users []string
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		users = append(users, r.Header.Get("X-User-ID"))
		mu.Unlock()
		_, _ = io.WriteString(w, "shop page")
	}))
	t.Cleanup(shop.Close)
	nodetest.CreateSale(t, n, "spring-sale", openSale(10, 1, 0, 0, 1000))
	nodetest.CreateSale(t, n, "other", openSale(10, 1, 0, 0, 1000))
	admitted := func(ev, user string) string {
		j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/"+ev+"/join", map[string]string{"X-User-ID": user}, nil)
		if j.Status != http.StatusOK {
			t.Fatalf("join: %d %s", j.Status, j.Raw)
		}
		var tok string
		nodetest.WaitFor(t, "admission", 30*time.Second, func() bool {
			s := nodetest.Call(t, http.MethodGet, n.URL()+"/events/"+ev+"/status", map[string]string{"Authorization": "Bearer " + nodetest.Str(j.Body, "ticket")}, nil)
			tok = nodetest.Str(s.Body, "admission_token")
			return tok != ""
		})
		return tok
	}
	tok := admitted("spring-sale", "shopper-7")
	keys, err := tokens.OpenKeyDir(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(ks *tokens.KeySet, aud string, now time.Time) string {
		raw, _, err := tokens.NewIssuer(ks, tokens.IssuerConfig{Issuer: issuer, Audience: aud}).Issue("spring-sale", "shopper-7", 1, time.Minute, now)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	strangers, err := tokens.OpenKeyDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sig := tok[strings.LastIndexByte(tok, '.')+1:]
	payload := strings.Split(tok, ".")[1]
	cases := map[string]string{
		"valid":          tok,
		"bearer":         tok,
		"forged":         tok[:len(tok)-len(sig)] + strings.Repeat("A", len(sig)),
		"alg none":       base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + payload + ".",
		"expired":        issue(keys, "anteroom-claim", time.Now().Add(-time.Hour)),
		"other event":    admitted("other", "shopper-7"),
		"other audience": issue(keys, "someone-else", time.Now()),
		"unknown key":    issue(strangers, "anteroom-claim", time.Now()),
		"garbage":        "not.a-token",
	}
	dir := t.TempDir()
	worker := strings.Replace(readmeBlock(t, "edge-worker"), "https://queue.shop.example/.well-known/jwks.json", n.URL()+"/.well-known/jwks.json", 1)
	raw, _ := json.Marshal(cases)
	for name, data := range map[string]string{"worker.mjs": worker, "run.mjs": workerRun, "tokens.json": string(raw)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(nodeBin, "run.mjs")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "SHOP="+shop.URL)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got map[string]struct {
		Status   int
		Location string
		Body     string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node printed %s", out)
	}
	waiting := shop.URL + "/e/spring-sale?return=%2Fcheckout%2Fitem%3Fx%3D1%26y%3D2"
	for name := range cases {
		a := got[name]
		switch name {
		case "valid", "bearer":
			if a.Status != http.StatusOK || a.Body != "shop page" {
				t.Errorf("%s: %d %q, want the shop page", name, a.Status, a.Body)
			}
		default:
			if a.Status != http.StatusFound || a.Location != waiting {
				t.Errorf("%s: %d to %q, want 302 to %s", name, a.Status, a.Location, waiting)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(users) != 2 || users[0] != "shopper-7" || users[1] != "shopper-7" {
		t.Errorf("the shop saw X-User-ID %q, want shopper-7 twice", users)
	}
}
