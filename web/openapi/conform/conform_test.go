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
	jsonH := http.Header{"Content-Type": {"application/json"}}
	problemH := http.Header{"Content-Type": {"application/problem+json"}, "Retry-After": {"2"}}
	status := `{"state":"waiting","position":4,"ahead":3,"eta_seconds":9,"poll_after_ms":1000}`
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
		{"a 503 without Retry-After", "POST", "/events/ev/claim", "", 503, http.Header{"Content-Type": {"application/problem+json"}},
			`{"type":"t","title":"Paused","status":503,"code":"paused"}`, false},
		{"a path outside the contract answered 404", "GET", "/nowhere", "", 404, problemH, `{}`, true},
		{"a path outside the contract answered 200", "GET", "/nowhere", "", 200, jsonH, `{}`, false},
		{"a bad body refused", "POST", "/admin/events/ev/close", `{"message":7}`, 400, problemH,
			`{"type":"t","title":"Bad request","status":400,"code":"bad_request"}`, true},
		{"a bad body accepted", "POST", "/admin/events/ev/close", `{"message":7}`, 200, jsonH, `{}`, false},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, tc.url, strings.NewReader(tc.reqBody))
		err := c.Check(req, []byte(tc.reqBody), tc.code, tc.header, []byte(tc.body))
		if (err == nil) != tc.ok {
			t.Errorf("%s: Check = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
