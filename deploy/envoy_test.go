package deploy_test

import (
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEnvoyExampleShape reads gateway/envoy-jwt-authn.yaml. No test runs
// Envoy (no registry the test machines reach ships an Envoy binary; the
// file says so at its top), so this checks what can be checked without
// it: the filters come in the order that makes the example safe (the
// caller's copies of the claim headers dropped before jwt_authn writes
// them, RBAC after jwt_authn, the router last), every header jwt_authn
// writes is one the first filter drops, the provider checks iss, aud and
// exp and fetches anteroom's JWKS from the issuer's host through a
// cluster that exists, /checkout/ requires the token, and the RBAC rule
// ties the route's event to the token's event claim.
func TestEnvoyExampleShape(t *testing.T) {
	path := filepath.Join("gateway", "envoy-jwt-authn.yaml")
	docs := load(t, path)
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents, want 1", path, len(docs))
	}
	doc := docs[0]
	hcm := get(doc, "static_resources", "listeners", "0", "filter_chains", "0", "filters", "0")
	if getString(hcm, "name") != "envoy.filters.network.http_connection_manager" {
		t.Fatalf("first network filter %q, want the HTTP connection manager", getString(hcm, "name"))
	}
	filters, _ := get(hcm, "typed_config", "http_filters").([]any)
	var names []string
	byName := map[string]any{}
	for _, f := range filters {
		n := getString(f, "name")
		names = append(names, n)
		byName[n] = get(f, "typed_config")
		if typ := getString(f, "typed_config", "@type"); !strings.HasPrefix(typ, "type.googleapis.com/envoy.extensions.filters.http.") {
			t.Errorf("filter %s: @type %q", n, typ)
		}
	}
	want := []string{"envoy.filters.http.header_mutation", "envoy.filters.http.jwt_authn", "envoy.filters.http.rbac", "envoy.filters.http.router"}
	if !slices.Equal(names, want) {
		t.Fatalf("http filters %v, want %v", names, want)
	}

	var dropped []string
	mutations, _ := get(byName[want[0]], "mutations", "request_mutations").([]any)
	for _, m := range mutations {
		dropped = append(dropped, strings.ToLower(getString(m, "remove")))
	}
	jwt := byName[want[1]]
	p := get(jwt, "providers", "anteroom")
	if p == nil {
		t.Fatal("no jwt_authn provider named anteroom")
	}
	written := []string{getString(p, "forward_payload_header")}
	claims, _ := get(p, "claim_to_headers").([]any)
	for _, c := range claims {
		written = append(written, getString(c, "header_name"))
	}
	for _, h := range written {
		if h == "" || !slices.Contains(dropped, strings.ToLower(h)) {
			t.Errorf("jwt_authn writes header %q, which header_mutation does not drop from the caller's request: a caller could name itself", h)
		}
	}
	if getString(p, "claim_to_headers", "0", "claim_name") != "sub" {
		t.Errorf("the first claim header carries %q, want the token's sub", getString(p, "claim_to_headers", "0", "claim_name"))
	}

	iss, err := url.Parse(getString(p, "issuer"))
	if err != nil || iss.Scheme != "https" || iss.Host == "" {
		t.Errorf("issuer %q: want ANTEROOM_ISSUER, an https URL", getString(p, "issuer"))
	}
	if aud := get(p, "audiences"); !slices.Equal(toStrings(aud), []string{"anteroom-claim"}) {
		t.Errorf("audiences %v, want [anteroom-claim] (ANTEROOM_AUDIENCE's default)", aud)
	}
	if getString(p, "require_expiration") != "true" {
		t.Error("require_expiration is not true: a token without exp would pass")
	}
	if getString(p, "from_headers", "0", "name") != "Authorization" || getString(p, "from_headers", "0", "value_prefix") != "Bearer " {
		t.Errorf("token read from %v, want Authorization: Bearer", get(p, "from_headers"))
	}
	jwks, err := url.Parse(getString(p, "remote_jwks", "http_uri", "uri"))
	if err != nil || jwks.Host != iss.Host || jwks.Path != "/.well-known/jwks.json" {
		t.Errorf("JWKS %q, want the issuer's /.well-known/jwks.json", getString(p, "remote_jwks", "http_uri", "uri"))
	}
	clusters := map[string]any{}
	for _, c := range toSlice(get(doc, "static_resources", "clusters")) {
		clusters[getString(c, "name")] = c
	}
	jc := clusters[getString(p, "remote_jwks", "http_uri", "cluster")]
	if jc == nil {
		t.Fatalf("the JWKS cluster %q does not exist", getString(p, "remote_jwks", "http_uri", "cluster"))
	}
	if getString(jc, "load_assignment", "endpoints", "0", "lb_endpoints", "0", "endpoint", "address", "socket_address", "address") != iss.Host ||
		getString(jc, "transport_socket", "name") != "envoy.transport_sockets.tls" {
		t.Errorf("the JWKS cluster does not reach %s over TLS", iss.Host)
	}
	if getString(jwt, "rules", "0", "match", "prefix") != "/checkout/" || getString(jwt, "rules", "0", "requires", "provider_name") != "anteroom" {
		t.Errorf("jwt_authn rules %v: want /checkout/ to require the anteroom provider", get(jwt, "rules"))
	}

	meta := getString(p, "payload_in_metadata")
	rbac := byName[want[2]]
	if getString(rbac, "rules", "action") != "ALLOW" {
		t.Fatalf("RBAC action %q, want ALLOW (deny what no policy allows)", getString(rbac, "rules", "action"))
	}
	policies, _ := get(rbac, "rules", "policies").(map[string]any)
	checkout := 0
	for name, pol := range policies {
		prefix := getString(pol, "permissions", "0", "url_path", "path", "prefix")
		if prefix == "" {
			if getString(pol, "permissions", "0", "not_rule", "url_path", "path", "prefix") != "/checkout/" {
				t.Errorf("policy %s allows something besides routes outside /checkout/", name)
			}
			continue
		}
		checkout++
		m := get(pol, "principals", "0", "metadata")
		ev := getString(m, "value", "string_match", "exact")
		if getString(m, "filter") != want[1] || getString(m, "path", "0", "key") != meta || getString(m, "path", "1", "key") != "event" ||
			prefix != "/checkout/"+ev {
			t.Errorf("policy %s: route %q, token event %q from %v: want the route's event to be the token's event claim", name, prefix, ev, m)
		}
	}
	if checkout == 0 {
		t.Error("no RBAC policy ties a checkout route to the token's event")
	}
}

func toSlice(v any) []any { s, _ := v.([]any); return s }

func toStrings(v any) []string {
	var out []string
	for _, x := range toSlice(v) {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
