package lifecycle

import (
	"errors"
	"testing"
	"time"
)

func TestSignVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"s.paused.1"}`)
	sig := Sign("secret-0123456789", now, body)
	tests := []struct {
		name, secret, header string
		body                 []byte
		at                   time.Time
		ok                   bool
	}{
		{"valid", "secret-0123456789", sig, body, now, true},
		{"within tolerance", "secret-0123456789", sig, body, now.Add(4 * time.Minute), true},
		{"other secret", "secret-9876543210", sig, body, now, false},
		{"body changed", "secret-0123456789", sig, []byte(`{"id":"s.paused.2"}`), now, false},
		{"too old", "secret-0123456789", sig, body, now.Add(6 * time.Minute), false},
		{"no timestamp", "secret-0123456789", "v1=00", body, now, false},
		{"garbage", "secret-0123456789", "t=x,v1=zz", body, now, false},
	}
	for _, tc := range tests {
		err := Verify(tc.secret, tc.header, tc.body, tc.at, 5*time.Minute)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrBadSignature)) {
			t.Errorf("%s: got %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
