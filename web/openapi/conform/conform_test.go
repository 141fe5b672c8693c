package conform

import (
	"net/http"
	"strings"
	"testing"
)

// TestContractCheck: the checker passes exchanges the contract documents
// and fails each kind of drift.
func TestContractCheck(t *testing.T) {
	c, err := Shared()
	if err != nil {
		t.Fatal(err)
	}
	jsonH := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"r1"}}
	problemH := http.Header{"Content-Type": {"application/problem+json"}, "Retry-After": {"2"}, "X-Request-Id": {"r1"}}
	status := `{"state":"waiting","position":4,"ahead":3,"eta_seconds":9,"poll_after_ms":1000}`
	rate := `{"per_second":0,"burst":0}`
	budget := `{"event":` + rate + `,"ip":` + rate + `,"device":` + rate + `,"user":` + rate + `}`
	defaults := `{"id":"","name":"","supply":0,"per_user_limit":1,"prequeue_opens_at":"0001-01-01T00:00:00Z",` +
		`"starts_at":"0001-01-01T00:00:00Z","ends_at":"0001-01-01T00:00:00Z","mode":"fcfs","random_window_seconds":0,` +
		`"admit_rate_per_second":1,"max_active":0,"no_show_grace_seconds":60,"admission_ttl_seconds":300,"claim_ttl_seconds":600,` +
		`"buckets":1,"reserve_units":0,"paused":false,"limits":{"join":` + budget + `,"claim":` + budget + `,` +
		`"status":{"ip":` + rate + `,"ticket":` + rate + `},"pow":{"enabled":null,"bits":0,"ttl_seconds":0},"captcha":{},` +
		`"invite_only":false,"one_claim_per_device":false,"one_claim_per_payment":false},"join_shards":1,"shop":{},` +
		`"version":0,"seed_commitment":""}`
	friction := `{"anonymous_visitors":true,"join_ip":` + rate + `,"join_ip_default":` + rate + `,"pow_required":false,"busy_network":` + rate + `}`
	cases := []struct {
		name        string
		method, url string
		reqBody     string
		code        int
		header      http.Header
		body        string
		ok          bool
	}{
		{"documented status", "GET", "http://127.0.0.1:9/events/ev/status", "", 200, jsonH, status, true},
		{"a field missing", "GET", "http://127.0.0.1:9/events/ev/status", "", 200, jsonH, `{"state":"waiting","position":4}`, false},
		{"a field of the wrong type", "GET", "/events/ev/status", "", 200, jsonH, strings.Replace(status, `"ahead":3`, `"ahead":"3"`, 1), false},
		{"an undocumented status", "GET", "/events/ev/status", "", 418, jsonH, `{}`, false},
		{"a documented problem", "POST", "/events/ev/claim", "", 503, problemH,
			`{"type":"t","title":"Paused","status":503,"code":"paused","request_id":"r"}`, true},
		{"a problem code outside the enum", "POST", "/events/ev/claim", "", 503, problemH,
			`{"type":"t","title":"x","status":503,"code":"no_such_code"}`, false},
		{"an answer without X-Request-ID", "GET", "/events/ev/status", "", 200, http.Header{"Content-Type": {"application/json"}}, status, false},
		{"a 503 without Retry-After", "POST", "/events/ev/claim", "", 503, http.Header{"Content-Type": {"application/problem+json"}, "X-Request-Id": {"r1"}},
			`{"type":"t","title":"Paused","status":503,"code":"paused"}`, false},
		{"a path outside the contract answered 404", "GET", "/nowhere", "", 404, problemH, `{}`, true},
		{"a path outside the contract answered 200", "GET", "/nowhere", "", 200, jsonH, `{}`, false},
		{"a bad body refused", "POST", "/admin/events/ev/close", `{"message":7}`, 400, problemH,
			`{"type":"t","title":"Bad request","status":400,"code":"bad_request"}`, true},
		{"a bad body accepted", "POST", "/admin/events/ev/close", `{"message":7}`, 200, jsonH, `{}`, false},
		{"a field the contract does not name", "GET", "/events/ev/status", "", 200, jsonH,
			strings.Replace(status, `{`, `{"debug":1,`, 1), false},
		{"a field the contract does not name, nested", "GET", "/admin/events/ev/passes", "", 200, jsonH,
			`{"passes":[],"counts":{"minted":0,"redeemed":0,"revoked":0,"refused":0,"lost":0}}`, false},
		{"a documented nested answer", "GET", "/admin/events/ev/passes", "", 200, jsonH,
			`{"passes":[],"counts":{"minted":0,"redeemed":0,"revoked":0,"refused":0}}`, true},
		{"a secret in an answer", "GET", "/admin/defaults", "", 200, jsonH, strings.Replace(defaults, `"shop":{}`, `"shop":{"secret":"s"}`, 1), false},
		{"an answer without its secret", "GET", "/admin/defaults", "", 200, jsonH, strings.Replace(defaults, `"shop":{}`, `"shop":{"secret_set":true}`, 1), true},
		{"a secret in a request", "PUT", "/admin/events/ev", `{"shop":{"secret":"0123456789abcdef0123"}}`, 200, jsonH, `{"config":` + defaults + `,"friction":` + friction + `}`, true},
		{"a date that is not one", "PUT", "/admin/events/ev", `{"starts_at":"soon"}`, 200, jsonH, `{"config":` + defaults + `,"friction":` + friction + `}`, false},
		{"a form refused as a page", "POST", "/e/ev/basic/join", "", 403, http.Header{"Content-Type": {"text/html; charset=utf-8"}, "X-Request-Id": {"r1"}}, "<p>no</p>", true},
		{"a refusal the route does not document", "GET", "/events/ev/status", "", 409, problemH, `{"type":"t","title":"Conflict","status":409,"code":"conflict"}`, false},
		{"HEAD as GET, no body", "HEAD", "/events/ev/status", "", 200, jsonH, "", true},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, tc.url, strings.NewReader(tc.reqBody))
		err := c.Check(req, []byte(tc.reqBody), tc.code, tc.header, []byte(tc.body))
		if testing.Verbose() && err != nil {
			t.Logf("%s: %v", tc.name, err)
		}
		if (err == nil) != tc.ok {
			t.Errorf("%s: Check = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
