package crowd

import (
	"context"
	"io"
	"net/http"
	"path"
	"sync"
	"time"
)

// meter is the transport every shopper's client.Client sends through: it
// bounds the crowd's requests in flight, counts them and records each
// one's latency under its endpoint (the path's last word: join, status,
// claim), from sending the request to having read the answer. The
// clients' retries pass through it too, so each sending counts once.
type meter struct {
	next http.RoundTripper
	r    *runner
	// timeout bounds one request from the moment it has a slot (a client
	// timeout that counted the wait for a slot would fail a crowd that
	// queues behind its own bound).
	timeout time.Duration
}

// RoundTrip waits for a free slot, sends req within the timeout and holds
// the slot until the answer's body is closed.
func (m *meter) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case m.r.sem <- struct{}{}:
	case <-req.Context().Done():
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, req.Context().Err()
	}
	m.r.c.requests.Add(1)
	ctx, cancel := context.WithTimeout(req.Context(), m.timeout)
	start := time.Now()
	resp, err := m.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		<-m.r.sem
		return nil, err
	}
	endpoint := path.Base(req.URL.Path)
	resp.Body = &meteredBody{ReadCloser: resp.Body, done: func() {
		cancel()
		m.r.lat.add(endpoint, time.Since(start))
		<-m.r.sem
	}}
	return resp, nil
}

// meteredBody calls done once, when the body is closed.
type meteredBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *meteredBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}
