package node_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/tokens"
)

// BenchmarkClaimHTTP measures granted claims per second end to end —
// HTTP, admission token verification, the claim script on a real
// redis-server, the order event published to JetStream and acknowledged
// before the 201 — with 128 concurrent clients, and in the same run the
// rate redis-benchmark reaches with EVALSHA of the same claim script on
// the same redis-server (one granted claim per call, 50 connections). It
// reports both, their ratio, and the CPU time this process spent per claim
// (cpu-µs/claim: node, embedded NATS and load generator). The load
// generator is a keep-alive HTTP/1.1 connection per client (loadConn), as
// wrk is: net/http's Transport cost a fifth of the process CPU.
//
//	go test -run '^$' -bench BenchmarkClaimHTTP -benchtime 20000x ./internal/node/
func BenchmarkClaimHTTP(b *testing.B) {
	r := testenv.StartRedis(b)
	ns := testenv.StartNATS(b)
	dir := b.TempDir()
	n := startNodeB(b, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), DataDir: dir}))
	sale := openSale(100_000_000, 1, 0, 0, 1000)
	sale["buckets"] = 4
	raw, _ := json.Marshal(sale)
	if a := rawCall(http.MethodPut, n.URL()+"/admin/events/bench", "Bearer "+n.AdminToken, "", raw); a != http.StatusCreated {
		b.Fatalf("create sale: %d", a)
	}
	keys, err := tokens.OpenKeyDir(filepath.Join(dir, "keys"))
	if err != nil {
		b.Fatal(err)
	}
	issuer := tokens.NewIssuer(keys, tokens.IssuerConfig{}) // as the node's status does
	toks := make([]string, b.N)
	for i := range toks {
		if toks[i], _, err = issuer.Issue("bench", fmt.Sprint("h", i), int64(i+1), time.Hour, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	addr := strings.TrimPrefix(n.URL(), "http://")
	var next, failed atomic.Int64
	b.SetParallelism(64)
	b.ResetTimer()
	cpu0 := processCPU(b, os.Getpid())
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var conn *loadConn
		defer func() { conn.close() }()
		for pb.Next() {
			i := next.Add(1) - 1
			if conn == nil {
				c, err := dialLoad(addr)
				if err != nil {
					failed.Add(1)
					continue
				}
				conn = c
			}
			code, err := conn.post("/events/bench/claim", toks[i], fmt.Sprint("h", i))
			if err != nil {
				conn.close()
				conn = nil
			}
			if code != http.StatusCreated {
				failed.Add(1)
			}
		}
	})
	httpRate := float64(b.N) / time.Since(start).Seconds()
	cpuPerClaim := (processCPU(b, os.Getpid()) - cpu0) * 1e6 / float64(b.N)
	b.StopTimer()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d claims failed", f, b.N)
	}
	evalsha := redisBenchmarkEvalsha(b, r)
	b.ReportMetric(httpRate, "claims/s")
	b.ReportMetric(cpuPerClaim, "cpu-µs/claim")
	b.ReportMetric(evalsha, "evalsha/s")
	b.ReportMetric(httpRate/evalsha, "ratio")
}

// redisBenchmarkEvalsha loads claim/claim.lua into r and returns the
// requests per second redis-benchmark reaches with EVALSHA of it: one
// grant per call for a random user.
func redisBenchmarkEvalsha(b *testing.B, r *testenv.Redis) float64 {
	b.Helper()
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		b.Skip("redis-benchmark not found (Debian package redis-tools)")
	}
	ctx := context.Background()
	c := r.Client(b)
	command, granted, err := claim.RedisBenchmark(ctx, c, 1_000_000_000)
	if err != nil {
		b.Fatal(err)
	}
	args := append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(portOf(r.Addr())), "-n", "50000", "-c", "50", "-r", "100000000", "-q"}, command...)
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		b.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`([0-9.]+) requests per second`).FindAllSubmatch(out, -1)
	if len(m) == 0 {
		b.Fatalf("redis-benchmark: no rate in %q", out)
	}
	rate, _ := strconv.ParseFloat(string(m[len(m)-1][1]), 64)
	if g, _ := granted(ctx); g < 25_000 {
		b.Fatalf("redis-benchmark granted only %d claims: the script did not run as a claim", g)
	}
	return rate
}

func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// startNodeB starts a node for a benchmark.
func startNodeB(b *testing.B, cfg node.Config) *node.Node {
	b.Helper()
	cfg.Addr = "127.0.0.1:0"
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.Close(ctx)
	})
	return n
}

func rawCall(method, url, auth, user string, body []byte) int {
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if user != "" {
		req.Header.Set("X-User-ID", user)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// loadConn is one keep-alive HTTP/1.1 connection of a benchmark's load
// generator: a request written in one call, the answer's status read and
// its body skipped, no goroutine of its own.
type loadConn struct {
	c   net.Conn
	r   *bufio.Reader
	buf []byte
}

func dialLoad(addr string) (*loadConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &loadConn{c: c, r: bufio.NewReaderSize(c, 4096)}, nil
}

func (l *loadConn) close() {
	if l != nil {
		l.c.Close()
	}
}

// post sends POST path with the admission token and user and returns the
// answer's status.
func (l *loadConn) post(path, token, user string) (int, error) {
	l.buf = append(l.buf[:0], "POST "...)
	l.buf = append(l.buf, path...)
	l.buf = append(l.buf, " HTTP/1.1\r\nHost: bench\r\nContent-Length: 0\r\nAuthorization: Bearer "...)
	l.buf = append(l.buf, token...)
	l.buf = append(l.buf, "\r\nX-User-ID: "...)
	l.buf = append(l.buf, user...)
	l.buf = append(l.buf, "\r\n\r\n"...)
	if _, err := l.c.Write(l.buf); err != nil {
		return 0, err
	}
	line, err := l.r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, err
	}
	length := 0
	for {
		line, err := l.r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		h := bytes.TrimRight(line, "\r\n")
		if len(h) == 0 {
			break
		}
		if k, v, ok := bytes.Cut(h, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return 0, err
			}
		}
	}
	if _, err := l.r.Discard(length); err != nil {
		return 0, err
	}
	return code, nil
}
