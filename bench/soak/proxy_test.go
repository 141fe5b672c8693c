//go:build soak && linux

package soak

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// proxy is a TCP proxy between one anteroom node and Redis. It plays two
// parts: the address a node knows Redis by (a failover retargets it to the
// promoted replica, as a Sentinel-aware VIP does), and the network between
// them, which the scheduler can slow (a delay on every chunk each way) or
// cut (every connection closed and new ones refused). tc and network
// namespaces need root, which CI does not give; the proxy needs nothing.
type proxy struct {
	ln     net.Listener
	target atomic.Value // string
	delay  atomic.Int64 // nanoseconds added to every chunk
	cut    atomic.Bool
	// stalled holds every chunk, the connections open, until the proxy
	// closes (what it held is then dropped).
	stalled atomic.Bool

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// newProxy listens on a free loopback port and forwards to target.
func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, conns: map[net.Conn]struct{}{}}
	p.target.Store(target)
	go p.accept()
	return p, nil
}

// addr is the proxy's "127.0.0.1:port".
func (p *proxy) addr() string { return p.ln.Addr().String() }

// retarget sends new connections to target and closes the old ones.
func (p *proxy) retarget(target string) {
	p.target.Store(target)
	p.dropAll()
}

// setDelay delays every chunk by d (0: none).
func (p *proxy) setDelay(d time.Duration) { p.delay.Store(int64(d)) }

// setCut cuts the link (true) or restores it.
func (p *proxy) setCut(on bool) {
	p.cut.Store(on)
	if on {
		p.dropAll()
	}
}

// stall holds every chunk each way from now on, the connections open,
// until close drops them with what they held.
func (p *proxy) stall() { p.stalled.Store(true) }

func (p *proxy) dropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *proxy) close() {
	_ = p.ln.Close()
	p.dropAll()
	p.stalled.Store(false) // after the drop: what was held goes nowhere
}

func (p *proxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.cut.Load() {
			_ = in.Close()
			continue
		}
		go p.serve(in)
	}
}

func (p *proxy) serve(in net.Conn) {
	out, err := net.DialTimeout("tcp", p.target.Load().(string), time.Second)
	if err != nil {
		_ = in.Close()
		return
	}
	p.track(in, true)
	p.track(out, true)
	defer func() {
		p.track(in, false)
		p.track(out, false)
		_ = in.Close()
		_ = out.Close()
	}()
	done := make(chan struct{}, 2)
	go func() { p.pipe(out, in); done <- struct{}{} }()
	go func() { p.pipe(in, out); done <- struct{}{} }()
	<-done
}

// pipe copies src to dst, delaying each chunk by the current delay.
func (p *proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := time.Duration(p.delay.Load()); d > 0 {
				time.Sleep(d) // the fault itself: a slow link
			}
			for p.stalled.Load() {
				time.Sleep(5 * time.Millisecond)
			}
			if p.cut.Load() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}
