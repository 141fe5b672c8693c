package crawler

import (
	"context"
	"fmt"
	"net"
	"strconv"
)

// ResolverAt returns a resolver that sends every query to the DNS server
// at hostport (host:port, e.g. 10.0.0.2:53), over UDP and, for a
// truncated answer, TCP, with Go's own resolver: the node's
// ANTEROOM_CRAWLER_RESOLVER. It checks hostport's form, not that a server
// answers there.
func ResolverAt(hostport string) (*net.Resolver, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, fmt.Errorf("crawler resolver %q: want host:port: %w", hostport, err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); host == "" || err != nil || n == 0 {
		return nil, fmt.Errorf("crawler resolver %q: want host:port with a port from 1 to 65535", hostport)
	}
	var d net.Dialer
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, hostport)
			if err != nil {
				return nil, err
			}
			// Go's resolver reads to the query's deadline, not its
			// cancellation: close the connection when ctx ends, so that
			// Verifier.Close ends a lookup at once.
			context.AfterFunc(ctx, func() { _ = c.Close() })
			return c, nil
		},
	}, nil
}
