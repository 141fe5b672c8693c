package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// metricsServer serves GET /metrics on its own address (Config.MetricsAddr),
// so that the public listener never shows it: the metrics name every sale
// and the node's load.
type metricsServer struct {
	ln   net.Listener
	srv  *http.Server
	done chan error
}

// startMetrics listens on addr and serves h at /metrics (everything else
// is 404) until close.
func startMetrics(addr string, h http.Handler) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s (metrics): %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	}))
	m := &metricsServer{ln: ln, done: make(chan error, 1), srv: &http.Server{
		Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second,
	}}
	go func() { m.done <- m.srv.Serve(ln) }()
	return m, nil
}

// close stops the metrics listener (a nil m is a no-op).
func (m *metricsServer) close(ctx context.Context) error {
	if m == nil {
		return nil
	}
	err := m.srv.Shutdown(ctx)
	if serr := <-m.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// MetricsURL is the base URL of the metrics listener (Config.MetricsAddr),
// "" without one.
func (n *Node) MetricsURL() string {
	if n.metrics == nil {
		return ""
	}
	return baseURL(n.metrics.ln.Addr())
}
