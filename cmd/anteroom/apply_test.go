package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/attest/attesttest"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/salefile"
	"github.com/anteroom/anteroom/internal/salefile/salefiletest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// applyNode starts a node (real redis-server and NATS) in the jwt
// identity mode, which sales reading signals from token claims need,
// with the door lists salefiletest's sales name, and returns it with an
// operator's API key and the environment apply runs in.
func applyNode(t *testing.T) (*node.Node, map[string]string) {
	t.Helper()
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	pub, _ := k.PublicKey.ECDH()
	raw := pub.Bytes() // 0x04 || X || Y
	jwks := fmt.Sprintf(`{"keys":[{"kty":"EC","crv":"P-256","kid":"shop-1","alg":"ES256","use":"sig","x":%q,"y":%q}]}`, b64(raw[1:33]), b64(raw[33:]))
	file := filepath.Join(t.TempDir(), "shop-jwks.json")
	if err := os.WriteFile(file, []byte(jwks), 0o600); err != nil {
		t.Fatal(err)
	}
	// Play Integrity keys, which a sale's attestation.google needs.
	play := attesttest.NewPlay(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Identity: "jwt", UserJWKS: file,
		UserIssuer: "https://shop.example", UserAudience: "anteroom",
		PlayIntegrityDecryptionKey: play.DecryptionKey, PlayIntegrityVerificationKey: play.VerificationKey})
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	for _, l := range salefiletest.Lists {
		if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/lists/"+l, admin, []byte(`{"kind":"user"}`)); a.Status != http.StatusCreated {
			t.Fatalf("create list %s: %d %s", l, a.Status, a.Raw)
		}
	}
	body, _ := json.Marshal(map[string]string{"name": "ci", "role": "operator", "password": "a long enough password of ci"})
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts", admin, body); a.Status != http.StatusCreated {
		t.Fatalf("create account: %d %s", a.Status, a.Raw)
	}
	a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts/ci/keys", admin, nil)
	env := map[string]string{"ANTEROOM_URL": n.URL(), "ANTEROOM_API_KEY": nodetest.Str(a.Body, "key")}
	for k, v := range salefiletest.Secrets {
		env[k] = v
	}
	return n, env
}

// cli runs the command with env; it returns stdout and the exit status
// main would give (0, 1 or errChanged's 2) with the error.
func cli(env map[string]string, args ...string) (string, int, error) {
	var out, errb bytes.Buffer
	err := run(context.Background(), args, func(k string) string { return env[k] }, &out, &errb)
	status := 0
	var es exitStatus
	switch {
	case errors.As(err, &es):
		status = es.code
	case err != nil:
		status = 1
	}
	return out.String(), status, err
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestApplyRoundTrip: two sales that between them set every field
// (salefiletest.Full, checked by reflection) are created from a file
// with an operator's API key (exit 2), applied again unchanged (exit
// 0); each exported with get sale (yaml and json) applies with no
// difference (--dry-run, exit 0) and reads back to the file's sales; a
// changed file's dry run prints each field old → new and changes
// nothing, and applied (exit 2) exports as the change; each save is
// audited as the key's account with the operator role; no secret is
// ever printed.
func TestApplyRoundTrip(t *testing.T) {
	n, env := applyNode(t)
	sales := salefiletest.Full(time.Now())
	data, err := salefile.Encode(sales, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, "sales.yaml", data)
	noSecret := func(what, out string) {
		t.Helper()
		for _, v := range salefiletest.Secrets {
			if strings.Contains(out, v) {
				t.Fatalf("%s printed a secret:\n%s", what, out)
			}
		}
	}
	out, status, err := cli(env, "apply", "-f", file)
	if status != 2 || !strings.Contains(out, "sale spring: created\n") || !strings.Contains(out, "sale draw: created\n") {
		t.Fatalf("apply: exit %d %v\n%s", status, err, out)
	}
	noSecret("apply", out)
	if out, status, err := cli(env, "apply", "-f", file); status != 0 || out != "sale spring: unchanged\nsale draw: unchanged\n" {
		t.Fatalf("apply again: exit %d %v\n%s", status, err, out)
	}
	for _, s := range sales {
		for _, format := range []string{"yaml", "json"} {
			exported, status, err := cli(env, "get", "sale", s.Config.ID, "-o", format)
			if status != 0 {
				t.Fatalf("get sale %s -o %s: %v", s.Config.ID, format, err)
			}
			noSecret("get sale", exported)
			back, err := salefile.Decode([]byte(exported), salefiletest.Getenv)
			if err != nil || len(back) != 1 {
				t.Fatalf("the export of %s (%s) does not read back: %v\n%s", s.Config.ID, format, err, exported)
			}
			live := salefiletest.AsLive(s)
			if changes, _, _ := salefile.Diff(&live, &back[0], false); len(changes) > 0 {
				t.Errorf("the export of %s (%s) differs from the file: %v", s.Config.ID, format, changes)
			}
			out, status, err := cli(env, "apply", "--dry-run", "-f", writeFile(t, "export."+format, []byte(exported)))
			if status != 0 || out != "sale "+s.Config.ID+": unchanged\n" {
				t.Errorf("apply --dry-run of the export of %s (%s): exit %d %v\n%s", s.Config.ID, format, status, err, out)
			}
		}
	}

	// A changed file: a dry run shows each change and changes nothing.
	changed := salefiletest.Full(time.Now())
	changed[0].Config = sales[0].Config
	changed[0].Config.AdmitRatePerSecond = 400
	changed[0].Config.Lanes[0].Share = 0.3
	changed[0].Config.Webhooks[0].Events = []string{"sold_out"}
	changed[0].Config.Closed = &event.Closure{} // still closed, no message, no announced end
	changed[0].Page.Colors.Primary = "#0a58ad"
	changed[1].Config = sales[1].Config
	data, _ = salefile.Encode(changed, "yaml")
	file = writeFile(t, "changed.yaml", data)
	before, _, _ := cli(env, "get", "sale", "spring")
	out, status, err = cli(env, "apply", "-f", file, "--dry-run")
	wantLines := []string{
		"sale spring: would be updated (dry run)",
		"  admit_rate_per_second: 250 → 400",
		`  closed: {"message":"Back soon","until":"` + sales[0].Config.Closed.Until.UTC().Format(time.RFC3339) + `"} → {}`,
		`  webhooks[0].events[0]: "sale_opened" → "sold_out"`,
		`  webhooks[0].events[1]: "your_turn" → (none)`,
		"  lanes[0].share: 0.2 → 0.3",
		`  page.colors.primary: "#0b63c4" → "#0a58ad"`,
		"sale draw: unchanged",
	}
	for _, l := range wantLines {
		if !strings.Contains(out, l+"\n") {
			t.Errorf("dry run: no line %q in\n%s", l, out)
		}
	}
	if status != 2 {
		t.Errorf("dry run: exit %d %v, want 2", status, err)
	}
	if after, _, _ := cli(env, "get", "sale", "spring"); after != before {
		t.Fatalf("a dry run changed the sale:\n%s\nwas\n%s", after, before)
	}
	if out, status, err := cli(env, "apply", "-f", file); status != 2 || !strings.Contains(out, "sale spring: updated\n") || !strings.Contains(out, "sale draw: unchanged\n") {
		t.Fatalf("apply the change: exit %d %v\n%s", status, err, out)
	}
	exported, _, _ := cli(env, "get", "sale", "spring")
	back, err := salefile.Decode([]byte(exported), salefiletest.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	live := salefiletest.AsLive(changed[0])
	if changes, _, _ := salefile.Diff(&live, &back[0], false); len(changes) > 0 {
		t.Errorf("the export after the change differs from the changed file: %v", changes)
	}
	if out, status, _ := cli(env, "apply", "-f", file); status != 0 || !strings.Contains(out, "sale spring: unchanged") {
		t.Errorf("the changed file again: exit %d\n%s", status, out)
	}

	// Audited as the key's account, with the operator role.
	au := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/audit?event=spring", map[string]string{"Authorization": "Bearer " + env["ANTEROOM_API_KEY"]}, nil)
	var actions []string
	entries, _ := au.Body["entries"].([]any)
	for _, e := range entries {
		m := e.(map[string]any)
		if m["who"] != "ci" || m["role"] != "operator" {
			t.Errorf("audit entry %v: want who ci, role operator", m)
		}
		actions = append(actions, fmt.Sprint(m["action"]))
		noSecret("the audit", fmt.Sprint(m))
	}
	for _, want := range []string{"event.create", "page.draft", "page.publish", "event.update"} {
		if !strings.Contains(strings.Join(actions, " "), want) {
			t.Errorf("audit of spring: %v, no %s", actions, want)
		}
	}
}

// TestApplyRefusals: a locked field is refused with the node's reason,
// the sale untouched, while the file's other sales apply (exit 1, each
// sale's outcome said); a file with a malformed or invalid sale, bad
// YAML or an unknown field is refused whole (exit 1, nothing applied);
// a viewer's key cannot apply.
func TestApplyRefusals(t *testing.T) {
	n, env := applyNode(t)
	now := time.Now().UTC().Truncate(time.Second)
	started := fmt.Sprintf(`  - id: started
    supply: %%d
    starts_at: %s
    ends_at: %s
`, now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))
	later := func(rate int) string {
		return fmt.Sprintf(`  - id: later
    supply: 10
    admit_rate_per_second: %d
    starts_at: %s
`, rate, now.Add(3*time.Hour).Format(time.RFC3339))
	}
	if out, status, err := cli(env, "apply", "-f", writeFile(t, "a.yaml", []byte("sales:\n"+fmt.Sprintf(started, 50)+later(5)))); status != 2 {
		t.Fatalf("create: exit %d %v\n%s", status, err, out)
	}
	version := func(id string) float64 {
		a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/"+id, map[string]string{"Authorization": "Bearer " + n.AdminToken}, nil)
		return a.Body["config"].(map[string]any)["version"].(float64)
	}
	v := version("started")

	// The supply locked at the start: refused with the lock's reason,
	// the other sale applied.
	out, status, err := cli(env, "apply", "-f", writeFile(t, "b.yaml", []byte("sales:\n"+fmt.Sprintf(started, 60)+later(7))))
	if status != 1 || !strings.Contains(out, "sale started: refused: 409 locked: ") ||
		!strings.Contains(out, "supply, reserve_units and buckets cannot change after the sale has started") ||
		!strings.Contains(out, "sale later: updated\n  admit_rate_per_second: 5 → 7\n") {
		t.Fatalf("a locked field: exit %d %v\n%s", status, err, out)
	}
	if !strings.Contains(err.Error(), "1 of 2 sales refused") {
		t.Errorf("error: %v", err)
	}
	if got := version("started"); got != v {
		t.Errorf("the refused sale's version moved: %v, want %v", got, v)
	}
	exported, _, _ := cli(env, "get", "sale", "started")
	if !strings.Contains(exported, "supply: 50\n") {
		t.Errorf("the refused sale changed:\n%s", exported)
	}

	// A file the command refuses whole: nothing applied, not even the
	// good sale beside the bad one.
	for _, tc := range []struct{ name, file, want string }{
		{"bad YAML", "sales:\n  - id: later\n   supply: [", "not YAML"},
		{"unknown field", "sales:\n" + later(9) + "    admit_rate: 3\n", `unknown field "admit_rate"`},
		{"an invalid sale beside a good one", "sales:\n" + later(9) + "  - id: bad\n    supply: 0\n    starts_at: 2030-01-01T00:00:00Z\n", "supply must be between 1 and"},
		{"a literal secret", "sales:\n" + later(9) + "    shop:\n      secret: hunter2hunter2hunter2\n", "a secret is never written in the file"},
		// A page the node would refuse is refused before any sale is
		// touched: a new sale is never left created without its page.
		{"a new sale's page the node would refuse", "sales:\n" + later(9) + "  - id: fresh\n    supply: 3\n    starts_at: 2030-01-01T00:00:00Z\n    page:\n      copy:\n        en:\n          nope: x\n",
			"sale fresh (line 6): page: copy.en.nope is not a message key"},
	} {
		out, status, err := cli(env, "apply", "-f", writeFile(t, "bad.yaml", []byte(tc.file)))
		if status != 1 || err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing applied") || out != "" {
			t.Errorf("%s: exit %d %v, want 1 and %q\n%s", tc.name, status, err, tc.want, out)
		}
		if strings.Contains(fmt.Sprint(err), "hunter2") {
			t.Errorf("%s: the error shows the secret: %v", tc.name, err)
		}
	}
	if got, _, _ := cli(env, "get", "sale", "later"); !strings.Contains(got, "admit_rate_per_second: 7\n") {
		t.Errorf("a refused file changed a sale:\n%s", got)
	}
	for _, id := range []string{"bad", "fresh"} {
		if _, status, _ := cli(env, "get", "sale", id); status != 1 {
			t.Errorf("a refused file created sale %s", id)
		}
	}

	// A viewer's key may export, not apply.
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	body, _ := json.Marshal(map[string]string{"name": "vera", "role": "viewer", "password": "a long enough password of vera"})
	nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts", admin, body)
	viewer := map[string]string{"ANTEROOM_URL": env["ANTEROOM_URL"], "ANTEROOM_API_KEY": nodetest.Str(nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts/vera/keys", admin, nil).Body, "key")}
	if _, status, err := cli(viewer, "get", "sale", "later"); status != 0 {
		t.Errorf("a viewer's export: %v", err)
	}
	if out, status, _ := cli(viewer, "apply", "-f", writeFile(t, "c.yaml", []byte("sales:\n"+later(12)))); status != 1 || !strings.Contains(out, "403 forbidden: this needs the operator role") {
		t.Errorf("a viewer's apply: exit %d\n%s", status, out)
	}
}

// TestSalesAsCodeDoc runs docs/sales-as-code.md's example: its file
// (the block "sales-file"), with its webhook secret in the environment
// and its door list on the node, is what --dry-run would create (exit
// 2), is created by apply (exit 2) and then unchanged (exit 0); get
// sale's YAML of it applies with no difference.
func TestSalesAsCodeDoc(t *testing.T) {
	n, env := applyNode(t)
	doc, err := os.ReadFile("../../docs/sales-as-code.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "<!-- readme-test: sales-file -->\n```yaml\n")
	block, _, ok2 := strings.Cut(block, "\n```")
	if !ok || !ok2 {
		t.Fatal("docs/sales-as-code.md has no sales-file block")
	}
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/lists/resellers", admin, []byte(`{"kind":"user"}`)); a.Status != http.StatusCreated {
		t.Fatalf("create list: %d %s", a.Status, a.Raw)
	}
	env["SHOP_WEBHOOK_SECRET"] = "a webhook secret of the docs' example"
	file := writeFile(t, "sales.yaml", []byte(block))
	if out, status, err := cli(env, "apply", "-f", file, "--dry-run"); status != 2 || !strings.Contains(out, "sale summer-drop: would be created (dry run)\n") ||
		!strings.Contains(out, "  webhooks[0].secret: (none) → (from ${SHOP_WEBHOOK_SECRET})\n") {
		t.Fatalf("dry run: exit %d %v\n%s", status, err, out)
	}
	if out, status, err := cli(env, "apply", "-f", file); status != 2 || out != "" && !strings.HasPrefix(out, "sale summer-drop: created\n") {
		t.Fatalf("apply: exit %d %v\n%s", status, err, out)
	}
	if out, status, err := cli(env, "apply", "-f", file); status != 0 || out != "sale summer-drop: unchanged\n" {
		t.Fatalf("apply again: exit %d %v\n%s", status, err, out)
	}
	exported, status, err := cli(env, "get", "sale", "summer-drop", "-o", "yaml")
	if status != 0 || strings.Contains(exported, env["SHOP_WEBHOOK_SECRET"]) {
		t.Fatalf("get sale: %v\n%s", err, exported)
	}
	if out, status, err := cli(env, "apply", "-f", writeFile(t, "export.yaml", []byte(exported)), "--dry-run"); status != 0 || out != "sale summer-drop: unchanged\n" {
		t.Fatalf("the export: exit %d %v\n%s", status, err, out)
	}
}
