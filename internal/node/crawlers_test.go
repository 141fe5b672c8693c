package node_test

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestNodeVerifiesCrawlers: a node asks the DNS server named by
// ANTEROOM_CRAWLER_RESOLVER, verifies a Googlebot and a host under a
// domain added by ANTEROOM_CRAWLER_DOMAINS (n.Crawlers, the rules'
// verified_crawler()), and not a host whose PTR claims googlebot.com
// for another address.
func TestNodeVerifiesCrawlers(t *testing.T) {
	dns := testenv.StartDNS(t)
	dns.SetPTR("66.249.66.1", "crawl-66-249-66-1.googlebot.com")
	dns.SetAddrs("crawl-66-249-66-1.googlebot.com", "66.249.66.1")
	dns.SetPTR("203.0.113.5", "bot-5.crawler.example")
	dns.SetAddrs("bot-5.crawler.example", "203.0.113.5")
	dns.SetPTR("203.0.113.6", "crawl-66-249-66-1.googlebot.com")
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(),
		CrawlerResolver: dns.Addr(), CrawlerDomains: []string{"crawler.example"}})

	for _, addr := range []string{"66.249.66.1", "203.0.113.5"} {
		a := netip.MustParseAddr(addr)
		nodetest.WaitFor(t, addr+" verified", 15*time.Second, func() bool { return n.Crawlers.Verified(a) })
	}
	spoofed := netip.MustParseAddr("203.0.113.6")
	if ok, err := n.Crawlers.Lookup(context.Background(), spoofed); ok || err != nil {
		t.Errorf("Lookup(spoofed) = %v, %v; want false, nil", ok, err)
	}
	if got := dns.Queries("PTR", "66.249.66.1"); got != 1 {
		t.Errorf("PTR queries for 66.249.66.1 = %d, want 1 (cached)", got)
	}
}

// TestCrawlerSettingsChecked: a malformed crawler resolver or a crawler
// domain that is a bare top-level domain (every host under it would be a
// crawler) stops the node at start, naming the setting.
func TestCrawlerSettingsChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  node.Config
		want string
	}{
		{"resolver without port", node.Config{CrawlerResolver: "10.0.0.2"}, "ANTEROOM_CRAWLER_RESOLVER"},
		{"resolver port 0", node.Config{CrawlerResolver: "10.0.0.2:0"}, "ANTEROOM_CRAWLER_RESOLVER"},
		{"top-level domain", node.Config{CrawlerDomains: []string{"com"}}, "ANTEROOM_CRAWLER_DOMAINS"},
		{"wildcard", node.Config{CrawlerDomains: []string{"*.crawler.example"}}, "ANTEROOM_CRAWLER_DOMAINS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Addr, cfg.DataDir = "127.0.0.1:0", t.TempDir()
			cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
			n, err := node.Start(context.Background(), cfg)
			if err == nil {
				_ = n.Close(context.Background())
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Start: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}
