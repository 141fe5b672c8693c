package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// pprofServer serves the Go runtime profiles (net/http/pprof) on an address
// of its own (Config.PprofAddr), never on the public listener: a profile
// shows the code, the heap and every goroutine's stack, and a CPU profile
// costs the node while it runs. Off unless asked for.
type pprofServer struct {
	ln   net.Listener
	srv  *http.Server
	done chan error
}

// pprofMux registers the pprof handlers explicitly on a private mux; the
// package's init also adds them to http.DefaultServeMux, which nothing in
// anteroom serves.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index) // heap, allocs, goroutine, block, mutex, ...
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// startPprof listens on addr and serves /debug/pprof/ until close.
func startPprof(addr string) (*pprofServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s (pprof): %w", addr, err)
	}
	p := &pprofServer{ln: ln, done: make(chan error, 1), srv: &http.Server{
		// No write timeout: /debug/pprof/profile?seconds=30 and trace
		// answer after their own duration.
		Handler: pprofMux(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		IdleTimeout: 60 * time.Second,
	}}
	go func() { p.done <- p.srv.Serve(ln) }()
	return p, nil
}

// close stops the pprof listener (a nil p is a no-op).
func (p *pprofServer) close(ctx context.Context) error {
	if p == nil {
		return nil
	}
	err := p.srv.Shutdown(ctx)
	if serr := <-p.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// PprofURL is the base URL of the pprof listener, "" when profiling is
// off (the default).
func (n *Node) PprofURL() string {
	if n.pprof == nil {
		return ""
	}
	return baseURL(n.pprof.ln.Addr())
}
