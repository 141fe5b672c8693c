// Package loopback finds free TCP ports on 127.0.0.1 for the programs
// that start servers of their own: the test environment, the benchmark
// harness and the million-user demo stack.
package loopback

import "net"

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. The
// port is released before returning, so another process may take it
// first; a caller that starts a server on it retries with a new port when
// the bind fails, or reports the failure.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
