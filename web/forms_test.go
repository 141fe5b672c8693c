package web

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/protect"
)

// countClaims grants every claim and counts them.
type countClaims struct {
	claimer
	n int
}

func (f *countClaims) Claim(_ context.Context, r claim.Request) (claim.Result, error) {
	f.n++
	return claim.Result{ClaimID: "c-" + r.User, Status: "pending"}, nil
}

// TestBasicFormTokenFromBodyOnly: the basic page's form token counts only
// in the POST form body. A token in the query string (which a link, a
// Referer or a log can carry to another site) is refused 403 and nothing
// is claimed; it used to be read there too (fasthttp's FormValue reads
// the query first).
func TestBasicFormTokenFromBodyOnly(t *testing.T) {
	claims := &countClaims{}
	app := limApp(t, Config{}, limSale(event.Limits{}), Deps{Admitter: rawAdmitter{}, Claims: claims})
	edge, err := protect.New(protect.Config{Secret: limSecret}, protect.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	tok := edge.FormToken("ev", "bob")
	post := func(query, body url.Values) int {
		t.Helper()
		req := httptest.NewRequest("POST", "/e/ev/basic/claim?"+query.Encode(), bytes.NewReader([]byte(body.Encode())))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-User-ID", "bob")
		req.Header.Set("Cookie", "anteroom_a_ev=bob")
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if st := post(url.Values{"form": {tok}}, url.Values{"idem": {"k1"}}); st != 403 || claims.n != 0 {
		t.Fatalf("form token in the query: %d with %d claims, want 403 and none", st, claims.n)
	}
	if st := post(url.Values{"form": {tok}}, url.Values{"form": {"forged"}, "idem": {"k1"}}); st != 403 || claims.n != 0 {
		t.Fatalf("a good token in the query, a forged one in the body: %d with %d claims, want 403 and none", st, claims.n)
	}
	if st := post(nil, url.Values{"form": {tok}, "idem": {"k1"}}); st == 403 || claims.n != 1 {
		t.Fatalf("form token in the body: %d with %d claims, want the claim made", st, claims.n)
	}
}
