package node_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/wait"
)

// opsRemote is a node known only by its URL: a process started by a test.
type opsRemote struct {
	url, admin string
}

// create creates an event through the admin API.
func (n *opsRemote) create(t *testing.T, id string, sale map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(sale)
	a := nodetest.Call(t, http.MethodPut, n.url+"/admin/events/"+id, map[string]string{"Authorization": "Bearer " + n.admin}, raw)
	if a.Status != http.StatusCreated {
		t.Fatalf("create %s: %d %s", id, a.Status, a.Raw)
	}
}

// admit joins user to ev and polls until an admission token arrives. Safe
// to call from several goroutines.
func (n *opsRemote) admit(t *testing.T, ev, user string) string {
	base := n.url + "/events/" + ev
	j := nodetest.Call(t, http.MethodPost, base+"/join", map[string]string{"X-User-ID": user}, nil)
	if j.Status != http.StatusOK {
		t.Errorf("join %s: %d %s", user, j.Status, j.Raw)
		return ""
	}
	var token string
	err := wait.Until(20*time.Second, 20*time.Millisecond, func() error {
		s := nodetest.Call(t, http.MethodGet, base+"/status", map[string]string{"Authorization": "Bearer " + nodetest.Str(j.Body, "ticket")}, nil)
		if token = nodetest.Str(s.Body, "admission_token"); token == "" {
			return fmt.Errorf("user %s: no admission within 20s", user)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	return token
}

// opsHTTP sends one request and decodes a JSON object answer.
func opsHTTP(tb testing.TB, method, url string, hdr map[string]string, body []byte) (int, map[string]any) {
	tb.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	var out map[string]any
	_ = opsDecodeJSON(resp, &out)
	return resp.StatusCode, out
}

// opsDecodeJSON decodes and closes a response body.
func opsDecodeJSON(resp *http.Response, v any) error {
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%d %q: %w", resp.StatusCode, raw, err)
	}
	return nil
}
