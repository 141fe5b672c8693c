package protect

import "testing"

// TestAnonymousIdentity: only the visitor cookie makes identities cheap,
// whether wired as a value or a pointer.
func TestAnonymousIdentity(t *testing.T) {
	for _, tc := range []struct {
		id   Identity
		want bool
	}{
		{VisitorIdentity{}, true},
		{&VisitorIdentity{}, true},
		{HeaderIdentity{}, false},
		{UserTokenIdentity{}, false},
		{nil, false},
	} {
		if got := anonymousIdentity(tc.id); got != tc.want {
			t.Errorf("anonymousIdentity(%T) = %v, want %v", tc.id, got, tc.want)
		}
	}
}
