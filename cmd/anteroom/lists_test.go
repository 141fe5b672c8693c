package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestListsCommand runs `anteroom lists` against a node (real redis-server
// and NATS), with the node's URL and the admin token from the environment
// and an operator's or a viewer's API key: create, load a 20 000-line file (replace, then a dry
// run and an append in NDJSON), ls, add and remove, export, a malformed
// line (the error names it, the list unchanged), a viewer's refused load,
// delete; flags before or after the words.
func TestListsCommand(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL()})
	key := func(name, role string) string {
		admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
		body, _ := json.Marshal(map[string]string{"name": name, "role": role, "password": "a long enough password " + name})
		if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts", admin, body); a.Status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, a.Status, a.Raw)
		}
		a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts/"+name+"/keys", admin, nil)
		return nodetest.Str(a.Body, "key")
	}
	opKey, viewerKey := key("olga", "operator"), key("vera", "viewer")
	env := map[string]string{"ANTEROOM_URL": n.URL(), "ANTEROOM_ADMIN_TOKEN": n.AdminToken}
	lists := func(args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := run(context.Background(), append([]string{"lists"}, args...), func(k string) string { return env[k] }, &out, &errb)
		return out.String(), err
	}
	must := func(want string, args ...string) string {
		t.Helper()
		out, err := lists(args...)
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("lists %q: %v %q, want %q", args, err, out, want)
		}
		return out
	}
	dir := t.TempDir()
	file := func(name string, lines []string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var users []string
	for i := range 20000 {
		users = append(users, fmt.Sprint("user-", i))
	}

	must("created vip (user)", "create", "vip", "--kind", "user")
	env["ANTEROOM_API_KEY"] = opKey // the operator's key goes before the admin token
	must("read 20000, added 20000, duplicates 0; vip now has 20000 entries", "load", "vip", file("users.csv", users))
	more := []string{`{"value":"user-1"}`, `{"value":"extra"}`}
	must("dry run, nothing changed: read 2, would add 1, duplicates 1; vip would have 20001 entries", "--append", "load", "vip", file("more.ndjson", more), "--dry-run")
	must("read 2, added 1, duplicates 1; vip now has 20001 entries", "load", "--append", "vip", file("more.ndjson", more))
	must("vip", "ls")
	must("vip: 20002 entries", "add", "vip", "someone")
	must("vip: 20001 entries", "remove", "vip", "someone")
	if out := must("", "export", "vip"); len(strings.Fields(out)) != 20001 {
		t.Fatalf("export: %d lines, want 20001", len(strings.Fields(out)))
	}
	if _, err := lists("create", "--kind=network", "gala.banned"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("an operator's create: %v, want 403", err)
	}
	must("created gala.banned (network)", "create", "--kind=network", "gala.banned", "--api-key", "", "--admin-token", n.AdminToken)
	must("gala.banned: 1 entries", "add", "gala.banned", "10.0.0.0/8")
	if out := must("10.0.0.0/8", "export", "gala.banned"); strings.TrimSpace(out) != "10.0.0.0/8" {
		t.Fatalf("network export: %q", out)
	}

	// A malformed line: the error names it; nothing applied.
	_, err := lists("load", "vip", file("bad.ndjson", []string{`{"value":"a"}`, `{"value":"b"}`, `{"value":`}))
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "400") {
		t.Fatalf("a malformed line 3: %v, want an error naming line 3", err)
	}
	must("vip: 20001 entries", "remove", "vip", "nobody-there")
	// A viewer cannot load; no credentials are 401.
	env["ANTEROOM_API_KEY"] = viewerKey
	if _, err := lists("load", "vip", file("one.csv", []string{"x"})); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("a viewer's load: %v, want 403", err)
	}
	must("vip", "ls")
	delete(env, "ANTEROOM_API_KEY")
	if _, err := lists("ls", "--admin-token", ""); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("no credentials: %v, want 401", err)
	}
	if _, err := lists("load", "vip", filepath.Join(dir, "missing.csv")); err == nil {
		t.Fatal("a missing file loaded")
	}
	for _, bad := range [][]string{{"create", "x"}, {"load", "vip"}, {"frobnicate"}, {}, {"load", "vip", "f", "--format", "xml"}} {
		if _, err := lists(bad...); err == nil {
			t.Errorf("lists %q: no error", bad)
		}
	}
	must("deleted vip", "delete", "vip")
	if _, err := lists("export", "vip"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("export of a deleted list: %v, want 404", err)
	}
}

// TestListsCommandNotReplicated: with the node's Redis replica connected
// but not copying (SIGSTOPped), `anteroom lists add` fails saying the
// change is saved and to run the command again; the entry is on the
// list. Run again once the replica copies, it succeeds.
func TestListsCommandNotReplicated(t *testing.T) {
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: primary.URL(), NATSURL: ns.URL()})
	env := map[string]string{"ANTEROOM_URL": n.URL(), "ANTEROOM_ADMIN_TOKEN": n.AdminToken}
	lists := func(args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := run(context.Background(), append([]string{"lists"}, args...), func(k string) string { return env[k] }, &out, &errb)
		return out.String(), err
	}
	if _, err := lists("create", "vip", "--kind", "user"); err != nil {
		t.Fatalf("create with the replica copying: %v", err)
	}

	replica.Stall(t)
	out, err := lists("add", "vip", "u1")
	if err == nil || !strings.Contains(err.Error(), "saved") || !strings.Contains(err.Error(), "run the same command again") {
		t.Fatalf("add with the replica stalled: %q %v, want a failure saying it is saved and to run it again", out, err)
	}
	if out, err := lists("ls"); err != nil || !listed(out, "vip", 1) {
		t.Fatalf("ls after the unreplicated add: %q %v, want vip with 1 entry", out, err)
	}

	replica.Resume()
	if out, err := lists("add", "vip", "u1"); err != nil || !strings.Contains(out, "vip: 1 entries") {
		t.Fatalf("the same add once the replica copies: %q %v, want vip: 1 entries", out, err)
	}
}

// listed reports whether ls output out shows list name with count
// entries.
func listed(out, name string, count int) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == name && f[2] == fmt.Sprint(count) {
			return true
		}
	}
	return false
}
