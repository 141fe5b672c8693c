package web

import (
	"testing"

	"github.com/anteroom/anteroom/event"
)

// TestAdminDefaults: GET /admin/defaults answers event.DefaultConfig to
// staff (the console fills a new event's form from it) and 401 to anyone
// else.
func TestAdminDefaults(t *testing.T) {
	app := testApp(t)
	if r, p := send(t, app, "GET", "/admin/defaults", nil, ""); r.StatusCode != 401 || p["code"] != "unauthenticated" {
		t.Fatalf("without credentials: %d %v, want 401 unauthenticated", r.StatusCode, p)
	}
	r, got := send(t, app, "GET", "/admin/defaults", map[string]string{"Authorization": "Bearer " + testAdminToken}, "")
	if r.StatusCode != 200 {
		t.Fatalf("GET /admin/defaults: %d %v", r.StatusCode, got)
	}
	d := event.DefaultConfig()
	want := map[string]any{
		"mode":                  string(d.Mode),
		"per_user_limit":        float64(d.PerUserLimit),
		"admit_rate_per_second": d.AdmitRatePerSecond,
		"admission_ttl_seconds": float64(d.AdmissionTTLSeconds),
		"claim_ttl_seconds":     float64(d.ClaimTTLSeconds),
		"no_show_grace_seconds": float64(d.NoShowGraceSeconds),
		"buckets":               float64(d.Buckets),
		"join_shards":           float64(d.JoinShards),
		"reserve_units":         0.0,
		"random_window_seconds": 0.0,
		"max_active":            0.0,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %v, want %v", k, got[k], v)
		}
	}
}
