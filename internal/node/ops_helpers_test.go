package node_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// remote is a node known only by its URL: a process started by a test.
type remote struct {
	url, admin string
}

// create creates an event through the admin API.
func (n *remote) create(t *testing.T, id string, sale map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(sale)
	a := call(t, http.MethodPut, n.url+"/admin/events/"+id, map[string]string{"Authorization": "Bearer " + n.admin}, raw)
	if a.status != http.StatusCreated {
		t.Fatalf("create %s: %d %s", id, a.status, a.raw)
	}
}

// admit joins user to ev and polls until an admission token arrives. Safe
// to call from several goroutines.
func (n *remote) admit(t *testing.T, ev, user string) string {
	base := n.url + "/events/" + ev
	j := call(t, http.MethodPost, base+"/join", map[string]string{"X-User-ID": user}, nil)
	if j.status != http.StatusOK {
		t.Errorf("join %s: %d %s", user, j.status, j.raw)
		return ""
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		s := call(t, http.MethodGet, base+"/status", map[string]string{"Authorization": "Bearer " + str(j.body, "ticket")}, nil)
		if token := str(s.body, "admission_token"); token != "" {
			return token
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("user %s: no admission within 20s", user)
	return ""
}

// decodeJSON decodes and closes a response body.
func decodeJSON(resp *http.Response, v any) error {
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
