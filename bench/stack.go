package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/anteroom/anteroom/internal/loopback"
)

// stack is what the measurements run against: a redis-server, one
// anteroom node (embedded JetStream) and the ceiling server, each its own
// process.
type stack struct {
	dir, redisAddr string
	bin, before    string // the node's binary; the build before a change (-before), or ""

	node, ceil, redis *proc
	ceilRedis         *proc // the redis-server the ceiling's join floor takes numbers from
	nodeURL, ceilURL  string
	metricsURL        string // the node's metrics listener (ANTEROOM_METRICS_ADDR)
	pprofAddr         string // the node's profiles (ANTEROOM_PPROF_ADDR)
	admin             string
	client            *http.Client
	fast              *fasthttp.HostClient
	tickets           []string
	claimTokens       []string
	claimNext         int
}

const benchAdmin = "bench-admin-token-0123456789abcdef"

func startStack(dir, bin, ceil string) (*stack, error) {
	s := &stack{dir: dir, admin: benchAdmin, client: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxIdleConns: 256},
	}}
	var err error
	if s.redis, s.redisAddr, err = startRedis(dir); err != nil {
		return nil, err
	}
	np, _ := loopback.FreePort()
	mp, _ := loopback.FreePort()
	s.nodeURL = fmt.Sprintf("http://127.0.0.1:%d", np)
	s.metricsURL = fmt.Sprintf("http://127.0.0.1:%d", mp)
	pp, _ := loopback.FreePort()
	s.pprofAddr = fmt.Sprintf("127.0.0.1:%d", pp)
	env := append(nodeEnv(dir, np, mp), "ANTEROOM_REDIS_URL=redis://"+s.redisAddr, "ANTEROOM_PPROF_ADDR="+s.pprofAddr)
	if s.node, err = startHTTP(dir, "anteroom", bin, np, "/healthz", env, "serve"); err != nil {
		s.stop()
		return nil, err
	}
	s.fast = &fasthttp.HostClient{Addr: fmt.Sprintf("127.0.0.1:%d", np), MaxConns: 4096, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	cp, _ := loopback.FreePort()
	s.ceilURL = fmt.Sprintf("http://127.0.0.1:%d", cp)
	if s.ceil, err = startHTTP(dir, "ceiling", ceil, cp, "/", nil, "-addr", fmt.Sprintf("127.0.0.1:%d", cp), "-redis", s.redisAddr); err != nil {
		s.stop()
		return nil, err
	}
	s.ceilRedis = s.redis
	return s, nil
}

// nodeEnv is a bench node's environment but its Redis and NATS: port on
// loopback, data (and signing keys) under dir.
func nodeEnv(dir string, port, metricsPort int) []string {
	return []string{
		"ANTEROOM_ADDR=127.0.0.1:" + fmt.Sprint(port),
		"ANTEROOM_METRICS_ADDR=127.0.0.1:" + fmt.Sprint(metricsPort),
		"ANTEROOM_DATA_DIR=" + filepath.Join(dir, "data"), "ANTEROOM_ADMIN_TOKEN=" + benchAdmin,
		"ANTEROOM_LOG_FORMAT=text", "ANTEROOM_DRAIN_DELAY=0s",
		// The bench plays the shop's gateway: it names users with
		// X-User-ID, which the node believes from loopback only.
		"ANTEROOM_IDENTITY=header", "ANTEROOM_TRUSTED_PROXIES=127.0.0.1",
	}
}

func (s *stack) stop() {
	s.ceil.stop()
	s.node.stop()
	s.redis.stop()
}

// do sends a JSON request to the node.
func (s *stack) do(ctx context.Context, method, path string, hdr map[string]string, body any) (int, map[string]any, error) {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.nodeURL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m, nil
}

// fastDo sends one request with fasthttp's client, which costs the shared
// cores far less than net/http, so load generators keep their schedule.
func (s *stack) fastDo(method, path string, hdr map[string]string) (int, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(s.nodeURL + path)
	req.Header.SetMethod(method)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	err := s.fast.Do(req, resp)
	return resp.StatusCode(), err
}

// createEvent creates a sale open for joining now.
func (s *stack) createEvent(ctx context.Context, id string, supply int64, rate float64, extra map[string]any) error {
	now := time.Now().UTC().Truncate(time.Second)
	body := map[string]any{
		"name": "bench " + id, "supply": supply, "per_user_limit": 1, "admit_rate_per_second": rate,
		"prequeue_opens_at": now.Add(-time.Minute), "starts_at": now.Add(-30 * time.Second),
		"ends_at": now.Add(2 * time.Hour), "random_window_seconds": 0,
	}
	for k, v := range extra {
		body[k] = v
	}
	code, m, err := s.do(ctx, http.MethodPut, "/admin/events/"+id, map[string]string{"Authorization": "Bearer " + s.admin}, body)
	if err != nil {
		return err
	}
	if code != http.StatusCreated && code != http.StatusOK {
		return fmt.Errorf("create %s: %d %v", id, code, m)
	}
	return nil
}

// joinMany joins n users to ev and returns their tickets.
func (s *stack) joinMany(ctx context.Context, ev, prefix string, n int) ([]string, error) {
	tickets := make([]string, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				code, m, err := s.do(ctx, http.MethodPost, "/events/"+ev+"/join", map[string]string{"X-User-ID": fmt.Sprintf("%s%d", prefix, i)}, nil)
				if err == nil && code != http.StatusOK {
					err = fmt.Errorf("join: %d %v", code, m)
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					continue
				}
				tickets[i], _ = m["ticket"].(string)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return tickets, first
}
