package main

import (
	"context"
	"flag"
	"io"

	"github.com/anteroom/anteroom/internal/node"
)

// worker runs the order worker against the deployment's Redis and NATS
// until interrupted: it records one order per claim and confirms claims.
// Run one or more beside the nodes; they share one durable consumer.
func worker(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	b := bindSettings(fs, getenv, false)
	concurrency := fs.Int("concurrency", 32, "order events handled at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o, err := b.build(stderr)
	if err != nil {
		return err
	}
	cfg := o.Config
	b.logInEffect(cfg.Log)
	c, err := node.Connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.RunWorker(ctx, *concurrency)
}
