// Package nodetest starts whole anteroom nodes for tests, on free loopback
// ports with temporary data directories, and talks to them over HTTP. The
// node and end-to-end tests share it.
package nodetest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
)

// Start starts a node with cfg on 127.0.0.1:0 (a temporary data directory
// and a silent logger unless cfg sets them) and closes it on cleanup.
func Start(t testing.TB, cfg node.Config) *node.Node {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			t.Errorf("close node: %v", err)
		}
	})
	return n
}

// HeaderMode returns cfg in header identity mode behind a trusted loopback
// proxy: the test plays the shop's gateway and names users with X-User-ID
// (cfg.IdentityHeader), which the node believes from 127.0.0.1 only.
// Loopback is added to cfg.TrustedProxies, so X-Forwarded-For from the
// test is believed too.
func HeaderMode(cfg node.Config) node.Config {
	cfg.Identity = "header"
	cfg.TrustedProxies = append(cfg.TrustedProxies[:len(cfg.TrustedProxies):len(cfg.TrustedProxies)], "127.0.0.1")
	return cfg
}

// Answer is one HTTP answer, its JSON object body decoded when it has one.
type Answer struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// Call sends one request and decodes a JSON object answer; it fails the
// test when the request cannot be sent or a JSON body cannot be decoded.
func Call(t testing.TB, method, url string, hdr map[string]string, body []byte) Answer {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := Answer{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &a.Body); err != nil {
			t.Fatalf("%s %s: undecodable %q", method, url, raw)
		}
	}
	return a
}
