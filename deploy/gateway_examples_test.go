package deploy_test

import (
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The room's own paths, served on the shop's host and never behind the
// gate (the waiting page could not load otherwise).
var roomPaths = []string{"/e/", "/events/", "/assets/", "/.well-known/jwks.json"}

// TestIngressNginxExampleShape reads gateway/ingress-nginx.yaml. No test
// runs an ingress-nginx controller (no Kubernetes on the test machines;
// the file says so at its top), so this checks what the annotations say:
// the gate URL is the route's sale's gate, asked with GET; a 401 goes to
// that sale's waiting page returning to the escaped request URI, with the
// redirect parameter named so the controller adds no rd=<full URL>; the
// gate gets the protected URI in X-Original-URI and an empty X-User-ID
// from a ConfigMap in the file; the user is copied from X-Anteroom-User;
// there is no auth cache and no snippet; and the room's paths go to
// anteroom through an Ingress without the gate.
func TestIngressNginxExampleShape(t *testing.T) {
	const prefix = "nginx.ingress.kubernetes.io/"
	docs := load(t, filepath.Join("gateway", "ingress-nginx.yaml"))
	configMaps := map[string]any{}
	var gated, room []any
	for _, d := range docs {
		switch getString(d, "kind") {
		case "ConfigMap":
			configMaps[getString(d, "metadata", "namespace")+"/"+getString(d, "metadata", "name")] = d
		case "Ingress":
			if get(d, "metadata", "annotations", prefix+"auth-url") != nil {
				gated = append(gated, d)
			} else {
				room = append(room, d)
			}
		default:
			t.Errorf("unexpected kind %q", getString(d, "kind"))
		}
	}
	if len(gated) != 1 || len(room) != 1 {
		t.Fatalf("%d gated and %d other Ingresses, want one of each", len(gated), len(room))
	}
	ing := gated[0]
	ann := func(k string) string { return getString(ing, "metadata", "annotations", prefix+k) }
	for k := range get(ing, "metadata", "annotations").(map[string]any) {
		if strings.Contains(k, "snippet") || k == prefix+"auth-cache-key" {
			t.Errorf("annotation %s: snippets are refused by recent controllers, and a cached gate answer outlives a door change", k)
		}
	}
	path := getString(ing, "spec", "rules", "0", "http", "paths", "0", "path")
	ev := strings.Trim(path, "/")
	if ev == "" || strings.Contains(ev, "/") || len(toSlice(get(ing, "spec", "rules", "0", "http", "paths"))) != 1 {
		t.Fatalf("the gated Ingress protects %q: want one path /{event}/", path)
	}
	gate, err := url.Parse(ann("auth-url"))
	if err != nil || gate.Path != "/events/"+ev+"/gate" {
		t.Errorf("auth-url %q: want the gate of %s, /events/%s/gate", ann("auth-url"), ev, ev)
	}
	if ann("auth-method") != "GET" {
		t.Errorf("auth-method %q, want GET", ann("auth-method"))
	}
	signin := ann("auth-signin")
	u, err := url.Parse(strings.Replace(signin, "$host", "shop.example", 1))
	if err != nil || u.Path != "/e/"+ev || u.Query().Get("return") != "$escaped_request_uri" || ann("auth-signin-redirect-param") != "return" {
		t.Errorf("auth-signin %q (redirect param %q): want /e/%s?return=$escaped_request_uri with the param named return", signin, ann("auth-signin-redirect-param"), ev)
	}
	if !slices.Contains(strings.Split(ann("auth-response-headers"), ","), "X-Anteroom-User") {
		t.Errorf("auth-response-headers %q: want X-Anteroom-User, the gate's admitted user", ann("auth-response-headers"))
	}
	cm := configMaps[ann("auth-proxy-set-headers")]
	if cm == nil {
		t.Fatalf("auth-proxy-set-headers names %q, not a ConfigMap of the file", ann("auth-proxy-set-headers"))
	}
	if getString(cm, "data", "X-Original-URI") != "$request_uri" {
		t.Errorf("the gate's X-Original-URI is %q, want $request_uri (the door's rules and the return see it)", getString(cm, "data", "X-Original-URI"))
	}
	if v, ok := get(cm, "data", "X-User-ID").(string); !ok || v != "" {
		t.Errorf("the gate's X-User-ID is %v, want \"\" (the client's cleared)", get(cm, "data", "X-User-ID"))
	}
	var served []string
	for _, p := range toSlice(get(room[0], "spec", "rules", "0", "http", "paths")) {
		served = append(served, getString(p, "path"))
		if getString(p, "backend", "service", "name") != "anteroom" {
			t.Errorf("room path %s goes to %q, want anteroom", getString(p, "path"), getString(p, "backend", "service", "name"))
		}
	}
	if !slices.Equal(served, roomPaths) {
		t.Errorf("the room's Ingress serves %v, want %v", served, roomPaths)
	}
}

// TestTraefikExampleShape reads gateway/traefik-forwardauth.yaml. No test
// runs Traefik (no package of it in reach; the file says so), so this
// checks the configuration: the gated router removes the client's
// X-User-ID before ForwardAuth runs, ForwardAuth asks the route's sale's
// gate, trusts no client X-Forwarded-*, sends the gate only the headers it
// lists (the cookie and bearer among them, never X-User-ID or X-Original-*)
// and copies X-Anteroom-User from its answer; the room's paths reach
// anteroom without the gate.
func TestTraefikExampleShape(t *testing.T) {
	docs := load(t, filepath.Join("gateway", "traefik-forwardauth.yaml"))
	if len(docs) != 1 {
		t.Fatalf("%d documents, want 1", len(docs))
	}
	h := get(docs[0], "http")
	mw := func(name string) any { return get(h, "middlewares", name) }
	var gated, room any
	for _, name := range []string{"shop-drop", "shop-anteroom"} {
		if get(h, "routers", name) == nil {
			t.Fatalf("no router %s", name)
		}
	}
	gated, room = get(h, "routers", "shop-drop"), get(h, "routers", "shop-anteroom")
	chain := toStrings(get(gated, "middlewares"))
	if len(chain) != 2 {
		t.Fatalf("the gated router's middlewares %v: want the identity strip, then ForwardAuth", chain)
	}
	if v, ok := get(mw(chain[0]), "headers", "customRequestHeaders", "X-User-ID").(string); !ok || v != "" {
		t.Errorf("middleware %s sets X-User-ID %v, want \"\" (removed) before ForwardAuth", chain[0], v)
	}
	fa := get(mw(chain[1]), "forwardAuth")
	if fa == nil {
		t.Fatalf("middleware %s is not forwardAuth", chain[1])
	}
	rule := getString(gated, "rule")
	i := strings.Index(rule, "PathPrefix(`/")
	ev := ""
	if i >= 0 {
		ev, _, _ = strings.Cut(rule[i+len("PathPrefix(`/"):], "/")
	}
	gate, err := url.Parse(getString(fa, "address"))
	if ev == "" || err != nil || gate.Path != "/events/"+ev+"/gate" {
		t.Errorf("forwardAuth address %q for rule %q: want the route's sale's gate", getString(fa, "address"), rule)
	}
	if getString(fa, "trustForwardHeader") != "false" {
		t.Error("trustForwardHeader is not false: the client's X-Forwarded-* would reach the gate")
	}
	sent := toStrings(get(fa, "authRequestHeaders"))
	if !slices.Contains(sent, "Cookie") || !slices.Contains(sent, "Authorization") {
		t.Errorf("authRequestHeaders %v: want Cookie and Authorization (the admission)", sent)
	}
	for _, s := range sent {
		if strings.EqualFold(s, "X-User-ID") || strings.HasPrefix(strings.ToLower(s), "x-original-") {
			t.Errorf("authRequestHeaders sends the client's %s to the gate", s)
		}
	}
	if !slices.Equal(toStrings(get(fa, "authResponseHeaders")), []string{"X-Anteroom-User"}) {
		t.Errorf("authResponseHeaders %v, want [X-Anteroom-User]", get(fa, "authResponseHeaders"))
	}
	for _, m := range toStrings(get(room, "middlewares")) {
		if get(mw(m), "forwardAuth") != nil {
			t.Errorf("the room's router is behind ForwardAuth %s", m)
		}
	}
	for _, p := range roomPaths {
		if !strings.Contains(getString(room, "rule"), "`"+p+"`") {
			t.Errorf("the room's router does not serve %s", p)
		}
	}
	if getString(room, "service") != "anteroom" || getString(gated, "service") != "shop" {
		t.Errorf("services: room %q, gated %q; want anteroom and shop", getString(room, "service"), getString(gated, "service"))
	}
}
