package node

import (
	"strings"
	"testing"
)

// TestCheckDevSiteverify: a stub on this machine is accepted (a loopback
// address or localhost); anything else is refused, naming the variable.
// TestServeRefusesRemoteSiteverify (cmd/anteroom) checks serve refuses.
func TestCheckDevSiteverify(t *testing.T) {
	for _, u := range []string{"", "http://127.0.0.1:8081/siteverify", "https://127.8.9.10/s", "http://[::1]:1/s", "http://localhost:9/s", "http://LOCALHOST/s"} {
		if err := checkDevSiteverify(u); err != nil {
			t.Errorf("%q: %v, want accepted", u, err)
		}
	}
	for _, u := range []string{"http://203.0.113.7/s", "http://10.0.0.5/s", "http://169.254.169.254/s", "http://stub.example/s",
		"http://localhost.example/s", "http://[fe80::1%25lo]/s", "ftp://127.0.0.1/s", "/siteverify"} {
		if err := checkDevSiteverify(u); err == nil || !strings.Contains(err.Error(), "ANTEROOM_DEV_CAPTCHA_SITEVERIFY_URL") {
			t.Errorf("%q: %v, want refused naming the variable", u, err)
		}
	}
}
