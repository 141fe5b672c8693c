package netguard

import (
	"net"
	"net/http"
	"time"
)

// Transport returns an http.Transport whose every connection is judged by
// p (Control) after name resolution. It uses no proxy: with one, the node
// would dial the proxy and the proxy the target, out of p's sight.
// Otherwise it is http.DefaultTransport's settings.
func (p Policy) Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: p.Control}
	t.DialContext = d.DialContext
	return t
}

// Client returns an http.Client on p's Transport with timeout (0: none)
// that never follows a redirect: the URL given is the only target, and a
// redirect is its answer.
func (p Policy) Client(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     p.Transport(),
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
