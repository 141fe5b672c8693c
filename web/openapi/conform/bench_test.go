package conform

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/web/openapi"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// BenchmarkCheck is the cost of checking one exchange: the node tests pay
// it once per request the tapped nodes answer; each case's kin-openapi
// twin checks the same exchange with kin-openapi alone. Run with
// go test -run XXX -bench Check -benchmem ./web/openapi/conform
func BenchmarkCheck(b *testing.B) {
	c, err := Shared()
	if err != nil {
		b.Fatal(err)
	}
	jsonH := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"r"}}
	problemH := http.Header{"Content-Type": {"application/problem+json"}, "Retry-After": {"2"}, "X-Request-Id": {"r"}}
	admin := `{"config":{"id":"ev","name":"n","supply":10,"per_user_limit":1,"prequeue_opens_at":"2026-01-01T00:00:00Z",` +
		`"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-01T01:00:00Z","mode":"fcfs","random_window_seconds":0,` +
		`"admit_rate_per_second":1,"max_active":0,"no_show_grace_seconds":60,"admission_ttl_seconds":300,"claim_ttl_seconds":600,` +
		`"buckets":1,"reserve_units":0,"paused":false,"limits":{"join":{"event":{"per_second":0,"burst":0},"ip":{"per_second":0,"burst":0},` +
		`"device":{"per_second":0,"burst":0},"user":{"per_second":0,"burst":0}},"claim":{"event":{"per_second":0,"burst":0},` +
		`"ip":{"per_second":0,"burst":0},"device":{"per_second":0,"burst":0},"user":{"per_second":0,"burst":0}},` +
		`"status":{"ip":{"per_second":0,"burst":0},"ticket":{"per_second":0,"burst":0}},"pow":{"enabled":null,"bits":0,"ttl_seconds":0},` +
		`"captcha":{},"invite_only":false,"one_claim_per_device":false,"one_claim_per_payment":false},"join_shards":1,"shop":{},` +
		`"version":1,"seed_commitment":"c"},"friction":{"anonymous_visitors":true,"join_ip":{"per_second":1,"burst":1},` +
		`"join_ip_default":{"per_second":1,"burst":1},"pow_required":false,"busy_network":{"per_second":10,"burst":10}}}`
	cases := []struct {
		name, method, path, body string
		status                   int
		header                   http.Header
		answer                   string
	}{
		{"status", "GET", "/events/ev/status", "", 200, jsonH, `{"state":"waiting","position":4,"ahead":3,"eta_seconds":9,"poll_after_ms":1000}`},
		{"claim refused", "POST", "/events/ev/claim", "", 503, problemH, `{"type":"t","title":"Paused","status":503,"code":"paused","request_id":"r"}`},
		{"admin event", "PUT", "/admin/events/ev", `{"supply":10}`, 200, jsonH, admin},
	}
	// kin-openapi checking the same answers by itself (3.1: a schema
	// compiled per value), for the ratio: why bodies exists.
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Spec)
	if err != nil {
		b.Fatal(err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		b.Fatal(err)
	}
	kin := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				req, _ := http.NewRequest(tc.method, "http://127.0.0.1:9"+tc.path, strings.NewReader(tc.body))
				req.Header.Set("Authorization", "Bearer x")
				if err := c.Check(req, []byte(tc.body), tc.status, tc.header, []byte(tc.answer)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/kin-openapi", func(b *testing.B) {
			for b.Loop() {
				req, _ := http.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
				req.Header.Set("Authorization", "Bearer x")
				if tc.body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				route, params, err := router.FindRoute(req)
				if err != nil {
					b.Fatal(err)
				}
				in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: kin}
				if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
					b.Fatal(err)
				}
				out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: tc.status, Header: tc.header, Options: kin}
				out.SetBodyBytes([]byte(tc.answer))
				if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
