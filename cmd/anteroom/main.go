// Command anteroom runs the anteroom waiting room and its tools.
//
//	anteroom serve      run a node (HTTP API, pages, background loops)
//	anteroom demo       run a sample sale with a simulated crowd on embedded servers
//	anteroom loadgen    simulate a crowd against running nodes and reconcile
//	anteroom verify     recompute a queue position from the revealed seed
//	anteroom keys       rotate, retire or list the admission signing keys
//	anteroom natsd      run a NATS server with JetStream (loopback clusters)
//	anteroom worker     run the order worker (confirms claims from the order stream)
//	anteroom reconcile  rebuild an event's stock and claims from the order stream
//	anteroom invite     print a signed invite of one user to an invite-only event
//	anteroom gateway fail-open  print nginx's fail-open deadline for when anteroom cannot answer
//	anteroom lists      manage the door's block and eligibility lists through a node's admin API
//	anteroom apply      create or update sales from a sales file (sales as code)
//	anteroom get sale   print a sale as a sales file
//	anteroom sales-schema  print (or with -w write) the sales file's JSON Schema
//	anteroom settings-table  print (or with -w rewrite) docs/configure.md's settings table
//	anteroom rules-table  print (or with -w rewrite) docs/configure.md's door rules tables
//	anteroom help       show this help
//
// Configuration comes from ANTEROOM_* environment variables and matching
// flags, registered once in settings.go; see `anteroom serve -h`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		var status exitStatus
		if errors.As(err, &status) {
			if status.msg != "" {
				fmt.Fprintln(os.Stderr, "anteroom:", status.msg)
			}
			os.Exit(status.code)
		}
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "anteroom:", err)
		}
		os.Exit(1)
	}
}

const usage = `usage: anteroom <command> [flags]

commands:
  serve      run a node: HTTP API, pages, frontier ticks, outbox publisher
  worker     run the order worker: record orders, confirm claims
  demo       run a sample sale with a simulated crowd on embedded Redis and NATS
  loadgen    simulate a crowd against running nodes: throughput, latency, reconciliation
  verify     recompute a queue position from a revealed seed
  reconcile  rebuild an event's stock and claims from the order stream after a Redis failover
  keys       rotate, retire or list the admission signing keys
  invite     print a signed invite of one user to an invite-only event
  gateway fail-open  print the nginx map of a fail-open deadline (when anteroom cannot answer)
  lists      manage block and eligibility lists on a node: ls, create, load, add, remove, export, delete
  apply      create or update sales from a sales file (-f FILE, --dry-run): exit 0 unchanged, 2 changed
  get sale   print a sale as a sales file (-o yaml|json)
  natsd      run a NATS server with JetStream (for a loopback cluster)
  settings-table  print the settings table of docs/configure.md (-w docs/configure.md rewrites it there)
  sales-schema  print the sales file's JSON Schema (-w docs/sales.schema.json rewrites it)
  rules-table  print the door rules' variables and functions tables of docs/configure.md (-w docs/configure.md rewrites them there)

Each command takes -h.
`

// run is the whole program; main only supplies the process's environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("missing command")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stdout, stderr)
	case "demo":
		return demo(ctx, args[1:], getenv, stdout, stderr)
	case "verify":
		return verify(args[1:], stdout, stderr)
	case "loadgen":
		return loadgen(ctx, args[1:], getenv, stdout, stderr)
	case "keys":
		return keys(args[1:], getenv, time.Now, stdout, stderr)
	case "natsd":
		return natsd(ctx, args[1:], stdout, stderr)
	case "worker":
		return worker(ctx, args[1:], getenv, stdout, stderr)
	case "reconcile":
		return reconcileCmd(ctx, args[1:], getenv, stdout, stderr)
	case "invite":
		return invite(args[1:], getenv, time.Now, stdout, stderr)
	case "gateway":
		return gateway(args[1:], time.Now, stdout, stderr)
	case "lists":
		return lists(ctx, args[1:], getenv, stdout, stderr)
	case "apply":
		return apply(ctx, args[1:], getenv, stdout, stderr)
	case "get":
		return get(ctx, args[1:], getenv, stdout, stderr)
	case "sales-schema":
		return salesSchema(args[1:], stdout, stderr)
	case "settings-table":
		return settingsTable(args[1:], stdout, stderr)
	case "rules-table":
		return rulesTable(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
