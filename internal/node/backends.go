package node

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
)

// backends are the node's connections and the embedded servers it owns.
type backends struct {
	rdb  redis.UniversalClient
	nc   *nats.Conn
	mini *miniredis.Miniredis
	ns   *server.Server
}

func openBackends(ctx context.Context, cfg *Config) (*backends, error) {
	b := &backends{}
	if err := b.openRedis(ctx, cfg); err != nil {
		b.close()
		return nil, err
	}
	if err := b.openNATS(cfg); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func (b *backends) openRedis(ctx context.Context, cfg *Config) error {
	switch {
	case len(cfg.RedisClusterAddrs) > 0:
		b.rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: cfg.RedisClusterAddrs, PoolSize: 64})
		cfg.Log.Info("redis: cluster", "seeds", cfg.RedisClusterAddrs)
	case cfg.RedisURL != "":
		opt, err := redis.ParseURL(cfg.RedisURL)
		if err != nil {
			return fmt.Errorf("redis url: %w", err)
		}
		opt.PoolSize = max(opt.PoolSize, 64)
		b.rdb = redis.NewClient(opt)
		cfg.Log.Info("redis: external", "addr", opt.Addr)
	default:
		m, err := miniredis.Run()
		if err != nil {
			return fmt.Errorf("embedded redis: %w", err)
		}
		b.mini = m
		b.rdb = redis.NewClient(&redis.Options{Addr: m.Addr(), PoolSize: 64})
		cfg.Log.Warn("redis: EMBEDDED in-process server (miniredis) — NOT DURABLE, all queue and stock state is lost on exit; set ANTEROOM_REDIS_URL for production", "addr", m.Addr())
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.rdb.Ping(pctx).Err(); err != nil {
		return fmt.Errorf("redis ping: %w", err)
	}
	return nil
}

func (b *backends) openNATS(cfg *Config) error {
	opts := []nats.Option{
		nats.Name("anteroom"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(false),
	}
	url := cfg.NATSURL
	if url == "" {
		dir := filepath.Join(cfg.DataDir, "jetstream")
		ns, err := server.NewServer(&server.Options{
			ServerName: "anteroom-embedded", Host: "127.0.0.1", Port: server.RANDOM_PORT,
			JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true,
		})
		if err != nil {
			return fmt.Errorf("embedded nats: %w", err)
		}
		ns.Start()
		if !ns.ReadyForConnections(10 * time.Second) {
			ns.Shutdown()
			return fmt.Errorf("embedded nats: not ready")
		}
		b.ns = ns
		url = ns.ClientURL()
		opts = append(opts, nats.InProcessServer(ns))
		cfg.Log.Info("nats: EMBEDDED JetStream server (single node, file store)", "store", dir)
	} else {
		cfg.Log.Info("nats: external", "url", url)
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return fmt.Errorf("nats connect: %w", err)
	}
	b.nc = nc
	return nil
}

// ready reports whether Redis and NATS answer.
func (b *backends) ready(ctx context.Context) error {
	if err := b.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	if !b.nc.IsConnected() {
		return fmt.Errorf("nats: %s", b.nc.Status())
	}
	return nil
}

func (b *backends) close() {
	if b.nc != nil {
		b.nc.Close()
	}
	if b.rdb != nil {
		_ = b.rdb.Close()
	}
	if b.ns != nil {
		b.ns.Shutdown()
		b.ns.WaitForShutdown()
	}
	if b.mini != nil {
		b.mini.Close()
	}
}
