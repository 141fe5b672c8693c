package node_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// listsNode starts a node in header mode on real Redis and NATS with cfg's
// list maxima.
func listsNode(t *testing.T, cfg node.Config) *node.Node {
	t.Helper()
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	cfg.RedisURL, cfg.NATSURL = r.URL(), ns.URL()
	return nodetest.Start(t, nodetest.HeaderMode(cfg))
}

// upload posts body to list name's bulk upload with query q.
func upload(t *testing.T, n *node.Node, auth, name, q, contentType string, body []byte) nodetest.Answer {
	t.Helper()
	return nodetest.Call(t, http.MethodPost, n.URL()+"/admin/lists/"+name+"/entries?"+q,
		map[string]string{"Authorization": "Bearer " + auth, "Content-Type": contentType}, body)
}

// listCount reads list name's count (and fails on anything but 200).
func listCount(t *testing.T, n *node.Node, name string) int64 {
	t.Helper()
	a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/lists/"+name, map[string]string{"Authorization": "Bearer " + n.AdminToken}, nil)
	if a.Status != http.StatusOK {
		t.Fatalf("get %s: %d %s", name, a.Status, a.Raw)
	}
	return int64(a.Body["count"].(float64))
}

func num(m map[string]any, k string) int64 { f, _ := m[k].(float64); return int64(f) }

// TestListsAdmin runs the list routes on a node: create, replace, append,
// a dry run, a malformed line (400 naming it, the list unchanged),
// single entries (a network's '/' escaped in the path), export, roles (a
// viewer reads but cannot load), bad names, an event's door naming an
// unknown list (400 naming it) or a list (then in use: delete is 409),
// and the audit trail, which records counts and never an entry.
func TestListsAdmin(t *testing.T) {
	n := listsNode(t, node.Config{})
	admin := n.AdminToken
	viewer := staffKey(t, n, "vera", "viewer")
	operator := staffKey(t, n, "olga", "operator")
	as := func(key string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}
	}
	call := func(method, path, key string, body string, want int) nodetest.Answer {
		t.Helper()
		a := nodetest.Call(t, method, n.URL()+path, as(key), []byte(body))
		if a.Status != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, a.Status, a.Raw, want)
		}
		return a
	}

	call(http.MethodPut, "/admin/lists/vip", admin, `{"kind":"user"}`, http.StatusCreated)
	call(http.MethodPut, "/admin/lists/gala.banned", admin, `{"kind":"network"}`, http.StatusCreated)
	if a := call(http.MethodPut, "/admin/lists/vip", admin, `{"kind":"user"}`, http.StatusConflict); a.Body["code"] != "exists" {
		t.Errorf("create twice: %s, want exists", a.Raw)
	}
	for _, bad := range []string{"/admin/lists/Bad", "/admin/lists/_x", "/admin/lists/a..b", "/admin/lists/" + strings.Repeat("a", 65)} {
		call(http.MethodPut, bad, admin, `{"kind":"user"}`, http.StatusBadRequest)
		call(http.MethodGet, bad+"/entries", admin, "", http.StatusBadRequest)
	}
	call(http.MethodPut, "/admin/lists/other", admin, `{"kind":"people"}`, http.StatusBadRequest)
	call(http.MethodPut, "/admin/lists/other", admin, `{"kind":"user","x":1}`, http.StatusBadRequest)
	call(http.MethodGet, "/admin/lists/nope", viewer, "", http.StatusNotFound)
	call(http.MethodPut, "/admin/lists/other", operator, `{"kind":"user"}`, http.StatusForbidden)

	// Replace (the default), then a dry run, then append.
	a := upload(t, n, operator, "vip", "format=csv", "text/csv", []byte("user_id\nu1\nu2\n\nu2\n"))
	if a.Status != http.StatusOK || num(a.Body, "read") != 3 || num(a.Body, "added") != 2 || num(a.Body, "duplicates") != 1 || a.Body["dry_run"] != false {
		t.Fatalf("replace: %d %s, want read 3, added 2, duplicates 1", a.Status, a.Raw)
	}
	if got := num(a.Body["list"].(map[string]any), "count"); got != 2 {
		t.Fatalf("after replace: count %d, want 2", got)
	}
	a = upload(t, n, operator, "vip", "mode=append&dry_run=true&format=ndjson", "application/x-ndjson", []byte(`{"value":"u3"}`+"\n"+`{"value":"u1"}`+"\n"))
	if a.Status != http.StatusOK || a.Body["dry_run"] != true || num(a.Body, "added") != 1 || listCount(t, n, "vip") != 2 {
		t.Fatalf("dry run: %d %s; count %d, want 1 would be added and 2 kept", a.Status, a.Raw, listCount(t, n, "vip"))
	}
	a = upload(t, n, operator, "vip", "mode=append&format=ndjson", "application/x-ndjson", []byte(`{"value":"u3"}`+"\n"+`{"value":"u1"}`+"\n"))
	if a.Status != http.StatusOK || num(a.Body, "added") != 1 || num(a.Body, "duplicates") != 1 || listCount(t, n, "vip") != 3 {
		t.Fatalf("append: %d %s, want 1 added, 1 duplicate, 3 entries", a.Status, a.Raw)
	}
	// A malformed line: 400 naming it, nothing applied, in either mode.
	for _, q := range []string{"format=ndjson", "mode=append&format=ndjson"} {
		a = upload(t, n, operator, "vip", q, "application/x-ndjson", []byte(`{"value":"u7"}`+"\n"+`{"value":"u8"}`+"\n"+"not json\n"+`{"value":"u9"}`+"\n"))
		if a.Status != http.StatusBadRequest || num(a.Body, "line") != 3 || !strings.Contains(nodetest.Str(a.Body, "detail"), "line 3") {
			t.Fatalf("malformed line 3 (%s): %d %s, want 400 naming line 3", q, a.Status, a.Raw)
		}
		if got := listCount(t, n, "vip"); got != 3 {
			t.Fatalf("after a refused upload (%s): %d entries, want 3", q, got)
		}
	}
	for _, q := range []string{"mode=both", "format=xml", "dry_run=yes"} {
		if a = upload(t, n, operator, "vip", q, "text/csv", []byte("u1\n")); a.Status != http.StatusBadRequest {
			t.Errorf("?%s: %d %s, want 400", q, a.Status, a.Raw)
		}
	}
	if a = upload(t, n, viewer, "vip", "", "text/csv", []byte("u1\n")); a.Status != http.StatusForbidden {
		t.Fatalf("a viewer's upload: %d %s, want 403", a.Status, a.Raw)
	}
	if a = upload(t, n, operator, "nope", "", "text/csv", []byte("u1\n")); a.Status != http.StatusNotFound {
		t.Fatalf("upload to no list: %d %s, want 404", a.Status, a.Raw)
	}

	// Single entries; a network's '/' is escaped in the path.
	if a = call(http.MethodPut, "/admin/lists/vip/entries/u10", operator, "", http.StatusOK); num(a.Body, "count") != 4 {
		t.Fatalf("add: %s, want 4 entries", a.Raw)
	}
	if a = call(http.MethodDelete, "/admin/lists/vip/entries/u10", operator, "", http.StatusOK); num(a.Body, "count") != 3 {
		t.Fatalf("remove: %s, want 3 entries", a.Raw)
	}
	call(http.MethodPut, "/admin/lists/vip/entries/u11", viewer, "", http.StatusForbidden)
	call(http.MethodPut, "/admin/lists/gala.banned/entries/10.1.0.0%2F16", operator, "", http.StatusOK)
	call(http.MethodPut, "/admin/lists/gala.banned/entries/not-a-network", operator, "", http.StatusBadRequest)

	// Export: one entry a line (ids as their keyed hashes, networks as CIDRs).
	exp := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/lists/vip/entries", as(viewer), nil)
	if lines := strings.Fields(string(exp.Raw)); exp.Status != http.StatusOK || len(lines) != 3 || exp.Header.Get("X-List-Count") != "3" {
		t.Fatalf("export: %d %q (X-List-Count %q), want 3 lines", exp.Status, exp.Raw, exp.Header.Get("X-List-Count"))
	}
	exp = nodetest.Call(t, http.MethodGet, n.URL()+"/admin/lists/gala.banned/entries", as(viewer), nil)
	if strings.TrimSpace(string(exp.Raw)) != "10.1.0.0/16" {
		t.Fatalf("network export: %q, want 10.1.0.0/16", exp.Raw)
	}
	l := call(http.MethodGet, "/admin/lists", viewer, "", http.StatusOK)
	if got := len(l.Body["lists"].([]any)); got != 2 {
		t.Fatalf("ls: %s, want 2 lists", l.Raw)
	}

	// An event's door: an unknown list refuses the save, naming it.
	sale := openSale(10, 1, 30*time.Minute, 0, 10)
	sale["door"] = map[string]any{"block_lists": []string{"gala.banned"}, "eligible_lists": []string{"vip", "ghost"}}
	body, _ := json.Marshal(sale)
	if a = call(http.MethodPut, "/admin/events/gala", admin, string(body), http.StatusBadRequest); !strings.Contains(nodetest.Str(a.Body, "detail"), "ghost") {
		t.Fatalf("a door naming an unknown list: %s, want 400 naming ghost", a.Raw)
	}
	call(http.MethodGet, "/admin/events/gala", admin, "", http.StatusNotFound) // not saved
	sale["door"] = map[string]any{"block_lists": []string{"gala.banned"}, "eligible_lists": []string{"vip"}}
	body, _ = json.Marshal(sale)
	call(http.MethodPut, "/admin/events/gala", admin, string(body), http.StatusCreated)
	if a = call(http.MethodDelete, "/admin/lists/vip", admin, "", http.StatusConflict); a.Body["code"] != "in_use" {
		t.Fatalf("delete a list in use: %s, want 409 in_use", a.Raw)
	}
	call(http.MethodDelete, "/admin/lists/vip", operator, "", http.StatusForbidden)
	sale["door"] = map[string]any{"block_lists": []string{"gala.banned"}, "eligible_lists": []string{}} // a PUT merges: say it
	body, _ = json.Marshal(sale)
	call(http.MethodPut, "/admin/events/gala", admin, string(body), http.StatusOK)
	call(http.MethodDelete, "/admin/lists/vip", admin, "", http.StatusNoContent)
	call(http.MethodGet, "/admin/lists/vip", admin, "", http.StatusNotFound)

	// The audit: who did what, with counts, never an entry.
	au := call(http.MethodGet, "/admin/audit", admin, "", http.StatusOK)
	raw := string(au.Raw)
	for _, v := range []string{"u1", "u2", "u3", "u10", "10.1.0.0"} {
		if strings.Contains(raw, `"`+v+`"`) || strings.Contains(raw, v+`\n`) {
			t.Errorf("the audit trail shows the entry %q: %s", v, raw)
		}
	}
	want := map[string]int{"list.create": 2, "list.load": 2, "list.add": 2, "list.remove": 1, "list.delete": 1}
	got := map[string]int{}
	for _, e := range au.Body["entries"].([]any) {
		e := e.(map[string]any)
		got[nodetest.Str(e, "action")]++
		if e["action"] == "list.load" && nodetest.Str(e, "who") != "olga" {
			t.Errorf("list.load by %q, want olga", e["who"])
		}
		if e["action"] == "list.add" && strings.Contains(fmt.Sprint(e["after"]), "banned") && nodetest.Str(e, "event") != "gala" {
			t.Errorf("a sale's own list's change is not filed under the sale: %v", e)
		}
	}
	for action, w := range want {
		if got[action] != w {
			t.Errorf("%d %s audit entries, want %d (all: %v)", got[action], action, w, got)
		}
	}
}

// TestListUploadLimits: the upload's own byte limit (refused unread when
// Content-Length says so, cut when a chunked body goes past it) and the
// entry maximum answer 413 too_large, nothing applied; every other route
// keeps its 16 KB.
func TestListUploadLimits(t *testing.T) {
	const lingerBytes = 1 << 20 // web's drain of a refused body
	n := listsNode(t, node.Config{ListUploadMaxBytes: 1000, ListMaxEntries: 5})
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken, "Content-Type": "application/json"}
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/lists/vip", admin, []byte(`{"kind":"user"}`)); a.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.Status, a.Raw)
	}
	if a := upload(t, n, n.AdminToken, "vip", "", "text/csv", []byte("a\nb\n")); a.Status != http.StatusOK {
		t.Fatalf("upload: %d %s", a.Status, a.Raw)
	}
	lines := func(count, width int) []byte {
		var b bytes.Buffer
		for i := range count {
			fmt.Fprintf(&b, "%0*d\n", width-1, i)
		}
		return b.Bytes()
	}
	post := func(body io.Reader, length, size int64) (int, map[string]any, bool) {
		req, _ := http.NewRequest(http.MethodPost, n.URL()+"/admin/lists/vip/entries", body)
		req.ContentLength = length
		req.Header.Set("Authorization", "Bearer "+n.AdminToken)
		req.Header.Set("Content-Type", "text/csv")
		resp, err := http.DefaultClient.Do(req)
		if err != nil && size > lingerBytes && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
			// Refused: the node drains at most a megabyte of what is
			// left (its lingering close) and closes while the client
			// still writes megabytes; the kernel's reset may overtake
			// the 413 it sent. Nothing may be applied all the same.
			return http.StatusRequestEntityTooLarge, nil, true
		}
		if err != nil {
			t.Fatalf("upload of %d bytes: %v", length, err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out, resp.Close
	}
	for _, c := range []struct {
		name   string
		body   []byte
		length bool
		bytes  bool // over the byte limit, not the entry maximum
	}{
		{"1002 bytes with their length", lines(2, 501), true, true},
		{"1002 bytes chunked", lines(2, 501), false, true},
		{"8 MB with its length", lines(16<<10, 500), true, true},
		{"8 MB chunked", lines(16<<10, 500), false, true},
		{"6 entries", lines(6, 4), true, false},
		{"6 entries chunked", lines(6, 4), false, false},
	} {
		length := int64(len(c.body))
		var body io.Reader = bytes.NewReader(c.body)
		if !c.length {
			length, body = -1, io.MultiReader(body)
		}
		status, out, closed := post(body, length, int64(len(c.body)))
		if out == nil && status == http.StatusRequestEntityTooLarge && c.bytes { // reset: see post
		} else if status != http.StatusRequestEntityTooLarge || out["code"] != "too_large" ||
			strings.Contains(fmt.Sprint(out["detail"]), "ANTEROOM_LIST_UPLOAD_MAX_BYTES") != c.bytes {
			t.Errorf("%s: %d %v, want 413 too_large (over the byte limit: %v)", c.name, status, out, c.bytes)
		}
		if !closed {
			t.Errorf("%s: the connection stays open, want Connection: close (the rest of the body is never read as a request)", c.name)
		}
		if got := listCount(t, n, "vip"); got != 2 {
			t.Fatalf("after %s: %d entries, want the 2 kept", c.name, got)
		}
	}
	// Within the limits; and the 16 KB of every other route.
	if status, out, _ := post(bytes.NewReader(lines(5, 200)), 1000, 1000); status != http.StatusOK || num(out, "read") != 5 {
		t.Fatalf("1000 bytes, 5 entries: %d %v, want 200", status, out)
	}
	big := []byte(`{"kind":"user","pad":"` + strings.Repeat("x", 17<<10) + `"}`)
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/lists/other", admin, big); a.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("17 KB to PUT /admin/lists/other: %d %s, want 413", a.Status, a.Raw)
	}
}

// TestListChangeNotReplicated: with the Redis primary's replica connected
// but not copying (SIGSTOPped), creating a list, adding an entry, a bulk
// upload and deleting a list answer 503 not_replicated with Retry-After
// after the node waited for the replica: each change stands on the
// primary and is audited. Sent again once the replica copies, the add
// answers 200.
func TestListChangeNotReplicated(t *testing.T) {
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: primary.URL(), NATSURL: ns.URL()}))
	as := map[string]string{"Authorization": "Bearer " + n.AdminToken, "Content-Type": "application/json"}
	call := func(method, path, body string) nodetest.Answer {
		t.Helper()
		return nodetest.Call(t, method, n.URL()+path, as, []byte(body))
	}
	if a := call(http.MethodPut, "/admin/lists/vip", `{"kind":"user"}`); a.Status != http.StatusCreated {
		t.Fatalf("create with the replica copying: %d %s", a.Status, a.Raw)
	}
	if a := call(http.MethodPut, "/admin/lists/gone", `{"kind":"network"}`); a.Status != http.StatusCreated {
		t.Fatalf("create with the replica copying: %d %s", a.Status, a.Raw)
	}

	replica.Stall(t)
	notReplicated := func(what string, a nodetest.Answer) {
		t.Helper()
		if a.Status != http.StatusServiceUnavailable || a.Body["code"] != "not_replicated" || a.Header.Get("Retry-After") == "" {
			t.Fatalf("%s with the replica stalled: %d %s (Retry-After %q), want 503 not_replicated with Retry-After",
				what, a.Status, a.Raw, a.Header.Get("Retry-After"))
		}
	}
	notReplicated("create", call(http.MethodPut, "/admin/lists/late", `{"kind":"user"}`))
	notReplicated("add", call(http.MethodPut, "/admin/lists/vip/entries/u1", ""))
	notReplicated("upload", upload(t, n, n.AdminToken, "vip", "mode=append", "text/csv", []byte("u2\nu3\n")))
	notReplicated("delete", call(http.MethodDelete, "/admin/lists/gone", ""))
	if got := listCount(t, n, "vip"); got != 3 {
		t.Errorf("vip holds %d entries on the primary, want the add and the upload standing (3)", got)
	}
	if got := listCount(t, n, "late"); got != 0 {
		t.Errorf("late holds %d entries, want it created (0)", got)
	}
	if a := call(http.MethodGet, "/admin/lists/gone", ""); a.Status != http.StatusNotFound {
		t.Errorf("gone after its delete: %d %s, want 404", a.Status, a.Raw)
	}
	got := map[string]int{}
	for _, e := range call(http.MethodGet, "/admin/audit", "").Body["entries"].([]any) {
		got[nodetest.Str(e.(map[string]any), "action")]++
	}
	for action, w := range map[string]int{"list.create": 3, "list.add": 1, "list.load": 1, "list.delete": 1} {
		if got[action] != w {
			t.Errorf("%d %s audit entries, want %d (all: %v)", got[action], action, w, got)
		}
	}

	replica.Resume()
	if a := call(http.MethodPut, "/admin/lists/vip/entries/u1", ""); a.Status != http.StatusOK || num(a.Body, "count") != 3 {
		t.Fatalf("the same add sent again once the replica copies: %d %s, want 200 with 3 entries", a.Status, a.Raw)
	}
}
