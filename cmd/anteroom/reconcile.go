package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/node"
)

// reconcileCmd rebuilds one event's stock and claim state in Redis from the
// order stream, as POST /admin/events/{id}/rebuild does: after a Redis
// failover, or whenever Redis and the stream disagree. Claims answer 503
// paused while it runs. It prints the rebuild's report as JSON.
func reconcileCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	build := nodeFlags(fs, getenv, stderr)
	ev := fs.String("event", "", "the event to rebuild (required)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !event.ValidID(*ev) {
		fs.Usage()
		return errors.New("reconcile: --event must name an event")
	}
	cfg, err := build()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := node.Connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	rep, err := c.Rebuild(ctx, *ev)
	if err != nil {
		return fmt.Errorf("reconcile %s: %w", *ev, err)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
