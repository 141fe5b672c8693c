package event

import (
	"errors"
	"testing"
	"time"
)

// TestFailOpenDeadline: a fail-open is a deadline that ends by itself,
// set only in the future, at most MaxFailOpen ahead, confirmed with the
// event id; a PUT of the event may keep it but never change it.
func TestFailOpenDeadline(t *testing.T) {
	now := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	until := now.Add(time.Hour)
	c := Config{ID: "drop", FailOpenUntil: &until}
	for _, tc := range []struct {
		at   time.Time
		want bool
	}{{now, true}, {until.Add(-time.Nanosecond), true}, {until, false}, {until.Add(time.Hour), false}} {
		if got := c.FailsOpen(tc.at); got != tc.want {
			t.Errorf("FailsOpen(%s) = %v, want %v", tc.at, got, tc.want)
		}
	}
	if (&Config{ID: "drop"}).FailsOpen(now) {
		t.Error("FailsOpen without a deadline = true")
	}

	for _, tc := range []struct {
		name    string
		until   time.Time
		confirm string
		ok      bool
	}{
		{"an hour", now.Add(time.Hour), "drop", true},
		{"the most", now.Add(MaxFailOpen), "drop", true},
		{"too far", now.Add(MaxFailOpen + time.Second), "drop", false},
		{"now", now, "drop", false},
		{"past", now.Add(-time.Second), "drop", false},
		{"zero", time.Time{}, "drop", false},
		{"no confirm", now.Add(time.Hour), "", false},
		{"wrong confirm", now.Add(time.Hour), "DROP", false},
	} {
		err := c.CheckFailOpen(tc.until, tc.confirm, now)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrFailOpen) {
			t.Errorf("%s: CheckFailOpen = %v, want ok %v (or ErrFailOpen)", tc.name, err, tc.ok)
		}
	}

	same := until.In(time.FixedZone("x", 3600))
	other := until.Add(time.Second)
	for _, tc := range []struct {
		name      string
		old, next *time.Time
		ok        bool
	}{
		{"none", nil, nil, true},
		{"kept", &until, &same, true},
		{"set", nil, &until, false},
		{"moved", &until, &other, false},
		{"cleared", &until, nil, false},
	} {
		err := KeepFailOpen(&Config{FailOpenUntil: tc.old}, &Config{FailOpenUntil: tc.next})
		if (err == nil) != tc.ok {
			t.Errorf("KeepFailOpen %s = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	var zero time.Time
	if err := (&Config{FailOpenUntil: &zero}).validateFailOpen(); !errors.Is(err, ErrInvalid) {
		t.Errorf("a zero stored deadline: %v, want ErrInvalid", err)
	}
}
