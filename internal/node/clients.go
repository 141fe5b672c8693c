package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/jsretry"
)

// Clients are a deployment's Redis and JetStream, for the commands that
// work beside the nodes (worker, reconcile). They are wired here, like a
// node's services, so a command never assembles claim services itself.
type Clients struct {
	Redis redis.UniversalClient
	JS    jetstream.JetStream
	cfg   Config
	back  *backends
}

// Connect opens cfg's Redis and NATS (never embedded ones: another process
// could not share them) and checks that the order stream exists (a node
// creates it; Connect never changes it).
func Connect(ctx context.Context, cfg Config) (*Clients, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.NATSURL == "" || (cfg.RedisURL == "" && len(cfg.RedisClusterAddrs) == 0) {
		return nil, errors.New("set ANTEROOM_REDIS_URL (or ANTEROOM_REDIS_CLUSTER_ADDRS) and ANTEROOM_NATS_URL: the nodes' servers")
	}
	back, err := openBackends(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(back.nc, jetstream.WithPublishAsyncMaxPending(8192))
	if err == nil {
		_, err = jsretry.Value(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, claim.StreamName) })
	}
	if err != nil {
		back.close()
		return nil, fmt.Errorf("order stream %s: %w", claim.StreamName, err)
	}
	return &Clients{Redis: back.rdb, JS: js, cfg: cfg, back: back}, nil
}

// Rebuild rebuilds event ev's stock and claim state in Redis from the
// order stream, as POST /admin/events/{id}/rebuild does.
func (c *Clients) Rebuild(ctx context.Context, ev string) (claim.Report, error) {
	svc := claim.NewService(claim.NewStore(c.Redis), claim.NewPublisher(c.JS))
	return claim.NewRebuilder(svc, c.JS, event.NewStore(c.Redis)).Rebuild(ctx, ev)
}

// RunWorker runs the order worker, handling at most concurrency order
// events at once (0: the worker's default), until ctx ends.
func (c *Clients) RunWorker(ctx context.Context, concurrency int) error {
	w, err := newWorker(ctx, &c.cfg, claim.NewStore(c.Redis), c.JS, concurrency)
	if err != nil {
		return err
	}
	c.cfg.Log.Info("order worker running", "consumer", claim.WorkerConsumer, "orders", claim.OrdersBucket)
	err = w.Run(ctx)
	c.cfg.Log.Info("order worker stopped")
	return err
}

// Close closes the connections.
func (c *Clients) Close() { c.back.close() }
