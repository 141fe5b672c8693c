package main

import (
	"context"
	"flag"
	"io"
	"time"

	"github.com/anteroom/anteroom/internal/node"
)

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	build := nodeFlags(fs, getenv, stderr)
	drain := fs.Duration("drain-timeout", 20*time.Second, "how long shutdown waits for in-flight requests")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := build()
	if err != nil {
		return err
	}
	n, err := node.Start(ctx, cfg)
	if err != nil {
		return err
	}
	<-ctx.Done()
	cfg.Log.Info("shutting down: draining in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), *drain)
	defer cancel()
	return n.Close(sctx)
}
