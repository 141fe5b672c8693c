package e2e

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// visitor is a browser without JavaScript, as plain HTTP: a cookie jar
// and form posts.
type visitor struct {
	t      *testing.T
	client *http.Client
	base   string
}

func newVisitor(t *testing.T, base string) *visitor {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &visitor{t: t, base: base, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// get loads path.
func (v *visitor) get(path string) formAnswer {
	v.t.Helper()
	return v.do(http.MethodGet, path, nil)
}

// post sends form to path with extra headers hdr (name, value pairs).
func (v *visitor) post(path string, form url.Values, hdr ...string) formAnswer {
	v.t.Helper()
	return v.do(http.MethodPost, path, form, append([]string{"Content-Type", "application/x-www-form-urlencoded"}, hdr...)...)
}

func (v *visitor) do(method, path string, form url.Values, hdr ...string) formAnswer {
	v.t.Helper()
	req, err := http.NewRequest(method, v.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		v.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := v.client.Do(req)
	if err != nil {
		v.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return formAnswer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// cookie returns the value of the visitor's cookie name, "" for none.
func (v *visitor) cookie(name string) string {
	u, _ := url.Parse(v.base + "/")
	for _, c := range v.client.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// setCookie sets (or, with value "", expires) the visitor's cookie name.
func (v *visitor) setCookie(name, value string) {
	u, _ := url.Parse(v.base + "/")
	c := &http.Cookie{Name: name, Value: value, Path: "/"}
	if value == "" {
		c.MaxAge = -1
	}
	v.client.Jar.SetCookies(u, []*http.Cookie{c})
}

var (
	formValue = regexp.MustCompile(`name="form" value="([^"]+)"`)
	idemValue = regexp.MustCompile(`name="idem" value="([^"]+)"`)
	dataKind  = regexp.MustCompile(`id="result" class="msg [a-z]+" data-kind="([a-z_]+)"`)
)

func match(re *regexp.Regexp, s string) string {
	if m := re.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// kind is the outcome the page shows (its result box), "" for none.
func (a formAnswer) kind() string { return match(dataKind, a.body) }

// page checks that a is an HTML page of status with outcome kind.
func (a formAnswer) page(t *testing.T, what string, status int, kind string) {
	t.Helper()
	if a.status != status || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") || a.kind() != kind {
		t.Errorf("%s: %d %s %q, want a %d HTML page showing %q; body %.300s", what, a.status, a.header.Get("Content-Type"), a.kind(), status, kind, a.body)
	}
}

// TestNoJSFormsRefuse: the basic page's forms take only what the JSON API
// takes, and refuse the rest with a page of the error table's status: a
// form post without its form token, with another visitor's, or sent from
// another site (Origin, Sec-Fetch-Site) is 403 and joins no one; a claim
// without an idempotency key is 400, without an admission 401, with an
// admission of another sale 403, and once the stock is gone 410 — none of
// them claims anything; a sale that asks for a proof of work says that
// JavaScript is needed; an unknown sale is a 404 page. The JSON API keeps
// its problem+json. The cookies are HttpOnly and SameSite=Lax and the
// page is never cached.
func TestNoJSFormsRefuse(t *testing.T) {
	n := startNode(t)
	nodetest.CreateSale(t, n, "forms", sale{supply: 1, opensIn: -3 * time.Second, startsIn: -2 * time.Second, rate: 100})
	nodetest.CreateSale(t, n, "other", sale{supply: 5, opensIn: -3 * time.Second, startsIn: -2 * time.Second, rate: 100})
	nodetest.CreateSale(t, n, "work", sale{supply: 5, opensIn: -3 * time.Second, startsIn: -2 * time.Second, rate: 100, pow: 8})
	msgs := catalog(t, "en")
	a := newVisitor(t, n.URL())

	lobby := a.get("/e/forms/basic")
	if lobby.status != http.StatusOK || match(formValue, lobby.body) == "" {
		t.Fatalf("the lobby: %d %.300s, want 200 with a join form", lobby.status, lobby.body)
	}
	for h, want := range map[string]string{"Cache-Control": "no-store", "Referrer-Policy": "same-origin", "X-Content-Type-Options": "nosniff"} {
		if got := lobby.header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	if csp := lobby.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "form-action 'self'") || strings.Contains(csp, "script-src") {
		t.Errorf("CSP %q, want no script at all and forms to this site only", csp)
	}
	for _, sc := range (&http.Response{Header: lobby.header}).Cookies() {
		if sc.Name == "anteroom_visitor" && (!sc.HttpOnly || sc.SameSite != http.SameSiteLaxMode) {
			t.Errorf("visitor cookie %+v, want HttpOnly and SameSite=Lax", sc)
		}
	}
	token := match(formValue, lobby.body)

	// Refused joins: nobody joins.
	for _, c := range []struct {
		what string
		form url.Values
		hdr  []string
	}{
		{"no form token", url.Values{}, nil},
		{"a forged form token", url.Values{"form": {strings.Repeat("A", len(token))}}, nil},
		{"another visitor's form token", url.Values{"form": {match(formValue, newVisitor(t, n.URL()).get("/e/forms/basic").body)}}, nil},
		{"another site's Origin", url.Values{"form": {token}}, []string{"Origin", "https://evil.example"}},
		{"Origin null", url.Values{"form": {token}}, []string{"Origin", "null"}},
		{"a cross-site fetch", url.Values{"form": {token}}, []string{"Sec-Fetch-Site", "cross-site"}},
	} {
		a.post("/e/forms/basic/join", c.form, c.hdr...).page(t, "join with "+c.what, http.StatusForbidden, "forbidden")
	}
	if a.cookie("anteroom_t_forms") != "" {
		t.Fatalf("a refused join gave a ticket")
	}
	if still := a.get("/e/forms/basic"); match(formValue, still.body) == "" || strings.Contains(still.body, `id="queue"`) {
		t.Errorf("after the refused joins the page is not the lobby: %.300s", still.body)
	}

	// The join itself: 303 to the page, a ticket cookie.
	j := a.post("/e/forms/basic/join", url.Values{"form": {token}}, "Origin", n.URL(), "Sec-Fetch-Site", "same-origin")
	if j.status != http.StatusSeeOther || j.header.Get("Location") != "/e/forms/basic" {
		t.Fatalf("join: %d %q, want 303 to /e/forms/basic", j.status, j.header.Get("Location"))
	}
	for _, sc := range (&http.Response{Header: j.header}).Cookies() {
		if sc.Name == "anteroom_t_forms" && (!sc.HttpOnly || sc.SameSite != http.SameSiteLaxMode) {
			t.Errorf("ticket cookie %+v, want HttpOnly and SameSite=Lax", sc)
		}
	}
	var adm formAnswer
	nodetest.WaitFor(t, "admission", 0, func() bool {
		adm = a.get("/e/forms/basic")
		return match(idemValue, adm.body) != ""
	})
	if !strings.Contains(adm.body, html.EscapeString(msgs["st_admitted"])) || a.cookie("anteroom_a_forms") == "" {
		t.Fatalf("admitted page: %.400s; admission cookie %q", adm.body, a.cookie("anteroom_a_forms"))
	}
	form := url.Values{"form": {match(formValue, adm.body)}, "idem": {match(idemValue, adm.body)}}

	// Refused claims: nothing is claimed.
	a.post("/e/forms/basic/claim", url.Values{"form": form["form"]}).page(t, "claim without an idempotency key", http.StatusBadRequest, "bad_request")
	a.post("/e/forms/basic/claim", url.Values{"idem": form["idem"]}).page(t, "claim without a form token", http.StatusForbidden, "forbidden")
	a.post("/e/forms/basic/claim", form, "Origin", "https://evil.example").page(t, "claim from another site", http.StatusForbidden, "forbidden")
	own := a.cookie("anteroom_a_forms")
	other, _ := nodetest.Admit(t, n, "other", map[string]string{"Cookie": "anteroom_visitor=" + a.cookie("anteroom_visitor")})
	a.setCookie("anteroom_a_forms", other)
	a.post("/e/forms/basic/claim", form).page(t, "claim with another sale's admission", http.StatusForbidden, "forbidden")
	a.setCookie("anteroom_a_forms", own[:len(own)-4]+"AAAA")
	a.post("/e/forms/basic/claim", form).page(t, "claim with a forged admission", http.StatusUnauthorized, "unauthenticated")
	a.setCookie("anteroom_a_forms", "")
	noAdm := a.post("/e/forms/basic/claim", form)
	noAdm.page(t, "claim without an admission", http.StatusUnauthorized, "unauthenticated")
	if !strings.Contains(noAdm.body, html.EscapeString(msgs["b_unauth"])) || !strings.Contains(noAdm.body, `href="/e/forms/basic"`) {
		t.Errorf("the page without an admission does not say so or lead back: %.600s", noAdm.body)
	}
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	granted := func() float64 {
		ev := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/forms", admin, nil)
		stock, _ := ev.Body["live"].(map[string]any)["stock"].(map[string]any)
		g, _ := stock["granted"].(float64)
		return g
	}
	if g := granted(); g != 0 {
		t.Fatalf("refused claims granted %v units", g)
	}

	// Another shopper takes the only unit through the JSON API: the form
	// is then refused 410 sold out.
	tok, who := nodetest.Admit(t, n, "forms", nil)
	hdr := map[string]string{"Authorization": "Bearer " + tok, "Cookie": who["Cookie"], "Idempotency-Key": "json-1"}
	if c := nodetest.Call(t, http.MethodPost, n.URL()+"/events/forms/claim", hdr, nil); c.Status != http.StatusCreated {
		t.Fatalf("the JSON claim: %d %s", c.Status, c.Raw)
	}
	a.setCookie("anteroom_a_forms", own)
	sold := a.post("/e/forms/basic/claim", form)
	sold.page(t, "claim once sold out", http.StatusGone, "sold_out")
	if !strings.Contains(sold.body, html.EscapeString(msgs["sold_out"])) {
		t.Errorf("the sold-out page does not say so: %.400s", sold.body)
	}
	if g := granted(); g != 1 {
		t.Errorf("granted %v units, want the JSON shopper's 1", g)
	}

	// The JSON API still answers problem+json.
	if c := nodetest.Call(t, http.MethodPost, n.URL()+"/events/forms/claim", nil, nil); c.Status != http.StatusUnauthorized || c.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("JSON claim without a token: %d %s, want 401 problem+json", c.Status, c.Header.Get("Content-Type"))
	}

	// A sale that asks for a proof of work: the page says what it needs.
	w := newVisitor(t, n.URL())
	wl := w.get("/e/work/basic")
	pw := w.post("/e/work/basic/join", url.Values{"form": {match(formValue, wl.body)}})
	pw.page(t, "join a sale with a proof of work", http.StatusForbidden, "pow_required")
	if !strings.Contains(pw.body, html.EscapeString(msgs["b_needsJs"])) {
		t.Errorf("the proof-of-work page does not say JavaScript is needed: %.400s", pw.body)
	}
	// A form's address opened by hand leads to the page.
	if g := w.get("/e/work/basic/claim"); g.status != http.StatusSeeOther || g.header.Get("Location") != "/e/work/basic" {
		t.Errorf("GET of the claim form's address: %d %q, want 303 to the page", g.status, g.header.Get("Location"))
	}
	// An unknown sale.
	w.get("/e/nope/basic").page(t, "an unknown sale", http.StatusNotFound, "unknown_event")
}
