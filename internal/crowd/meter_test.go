package crowd

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestMeterTimeoutStartsWithTheSlot checks that a request's timeout
// counts from the moment it has a slot: a crowd queued behind its own
// bound on requests in flight must not time out while it waits. (With
// the timeout on the http.Client, which counted the wait, TestWholeSale
// failed on a busy machine with joins "Client.Timeout exceeded".)
func TestMeterTimeoutStartsWithTheSlot(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"state":"waiting"}`))
	}))
	defer srv.Close()
	r := &runner{sem: make(chan struct{}, 1)}
	const timeout = time.Second
	hc := &http.Client{Transport: &meter{next: srv.Client().Transport, r: r, timeout: timeout}}

	r.sem <- struct{}{} // every slot taken
	held := time.Now()
	type result struct {
		status int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := hc.Get(srv.URL + "/events/e/status")
		if err != nil {
			done <- result{err: err}
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- result{status: resp.StatusCode}
	}()
	// Hold the slot past the timeout, then free it.
	time.Sleep(timeout + timeout/2)
	select {
	case res := <-done:
		t.Fatalf("the request ended while it had no slot: %+v", res)
	default:
	}
	<-r.sem
	res := <-done
	if res.err != nil || res.status != http.StatusOK {
		t.Fatalf("after waiting %s for a slot: %+v, want 200", time.Since(held).Round(time.Millisecond), res)
	}
	if n := r.c.requests.Load(); n != 1 {
		t.Errorf("requests counted %d, want 1", n)
	}
	if e := r.lat.summary(time.Second)["status"]; e.Count != 1 {
		t.Errorf("status latencies recorded %d, want 1", e.Count)
	}
	if len(r.sem) != 0 {
		t.Errorf("%d slots still held after the answer was read", len(r.sem))
	}
}
