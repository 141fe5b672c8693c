package shopper

import "testing"

// TestSafeReturn: a waiting page returns only to a path on its own site.
func TestSafeReturn(t *testing.T) {
	for _, tc := range []struct {
		ret  string
		want string
	}{
		{"/drop/item?a=1&b=2", "/e/drop?return=%2Fdrop%2Fitem%3Fa%3D1%26b%3D2"},
		{"/", "/e/drop?return=%2F"},
		{"", "/e/drop"},
		{"drop/item", "/e/drop"},
		{"https://evil.example/", "/e/drop"},
		{"//evil.example/x", "/e/drop"},
		{"/\\evil.example", "/e/drop"},
		{"/\t/evil.example", "/e/drop"},
		{"/a\r\nSet-Cookie: x=1", "/e/drop"},
		{"/\x7f", "/e/drop"},
		{"/" + string(make([]byte, maxReturnLen)), "/e/drop"},
	} {
		if got := waitingPage("drop", tc.ret); got != tc.want {
			t.Errorf("waitingPage(%q) = %q, want %q", tc.ret, got, tc.want)
		}
	}
}
