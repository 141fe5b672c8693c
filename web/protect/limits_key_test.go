package protect

import "testing"

// TestLimiterIP: IPv4 per address, IPv6 per /64, mapped IPv4 as IPv4.
func TestLimiterIP(t *testing.T) {
	for in, want := range map[string]string{
		"198.51.100.7":                     "198.51.100.7",
		"::ffff:198.51.100.7":              "198.51.100.7",
		"2001:db8:1:2::1":                  "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff:ffff:ffff:ffff": "2001:db8:1:2::/64",
		"2001:db8:1:3::1":                  "2001:db8:1:3::/64",
		"fe80::1%eth0":                     "fe80::/64",
		"::1":                              "::/64",
		"not-an-address":                   "not-an-address",
		"":                                 "",
	} {
		if got := limiterIP(in); got != want {
			t.Errorf("limiterIP(%q) = %q, want %q", in, got, want)
		}
	}
}
