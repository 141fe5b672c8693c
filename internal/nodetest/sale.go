package nodetest

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/anteroom/anteroom/internal/node"
)

// CreateSale creates event id on n through the admin API with the event
// configuration sale (anything encoding/json turns into the admin API's
// JSON object) and fails the test unless n answers 201 Created.
func CreateSale(t testing.TB, n *node.Node, id string, sale any) {
	t.Helper()
	raw, err := json.Marshal(sale)
	if err != nil {
		t.Fatalf("create %s: %v", id, err)
	}
	a := Call(t, http.MethodPut, n.URL()+"/admin/events/"+id, map[string]string{"Authorization": "Bearer " + n.AdminToken}, raw)
	if a.Status != http.StatusCreated {
		t.Fatalf("create %s: %d %s", id, a.Status, a.Raw)
	}
}

// Admit joins ev on n over HTTP with the headers who and polls the status
// until an admission token arrives. With who nil it joins as a new
// anonymous visitor (the default identity) and returns the Cookie header
// that names the visitor; otherwise it returns who. It fails the test when
// the join is refused or no token comes within
// Patience: it is for sales that admit the joiner at once or within seconds.
func Admit(t testing.TB, n *node.Node, ev string, who map[string]string) (token string, named map[string]string) {
	t.Helper()
	base := n.URL() + "/events/" + ev
	j := Call(t, http.MethodPost, base+"/join", who, nil)
	if j.Status != http.StatusOK {
		t.Fatalf("join: %d %s", j.Status, j.Raw)
	}
	named = who
	if who == nil {
		for _, c := range (&http.Response{Header: j.Header}).Cookies() {
			if c.Name == "anteroom_visitor" {
				named = map[string]string{"Cookie": c.Name + "=" + c.Value}
			}
		}
		if named == nil {
			t.Fatalf("join set no visitor cookie: %v", j.Header.Values("Set-Cookie"))
		}
	}
	WaitFor(t, "admission", 0, func() bool {
		s := Call(t, http.MethodGet, base+"/status", map[string]string{"Authorization": "Bearer " + Str(j.Body, "ticket")}, nil)
		token = Str(s.Body, "admission_token")
		return token != ""
	})
	return token, named
}

// AdmitUser is Admit as user, named by X-User-ID: n must believe the
// header from loopback (see HeaderMode). It returns the admission token.
func AdmitUser(t testing.TB, n *node.Node, ev, user string) string {
	t.Helper()
	token, _ := Admit(t, n, ev, map[string]string{"X-User-ID": user})
	return token
}
