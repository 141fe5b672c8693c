package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

const natsdUsage = `usage: anteroom natsd [flags]

Run a NATS server with JetStream in this process: for a loopback cluster
(deploy/local/run.sh) or a machine without a nats-server binary. It is the
same server as nats-server (github.com/nats-io/nats-server/v2). Flags set
on the command line override a -config file.

flags:
`

// natsd runs an embedded nats-server with JetStream until ctx is done.
func natsd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("natsd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, natsdUsage); fs.PrintDefaults() }
	config := fs.String("config", "", "nats-server configuration file (deploy/nats/nats.conf); flags override it")
	name := fs.String("name", "", "server name, unique in the cluster (required with -cluster-port)")
	host := fs.String("host", "127.0.0.1", "client listen host")
	port := fs.Int("port", 4222, "client port")
	httpPort := fs.Int("http-port", 0, "monitoring port (/healthz, /varz, /jsz); 0 turns it off")
	storeDir := fs.String("store-dir", "", "JetStream store directory (required)")
	clusterName := fs.String("cluster-name", "anteroom", "cluster name, the same on every server")
	clusterPort := fs.Int("cluster-port", 0, "cluster (route) port; 0 runs a single server")
	routes := fs.String("routes", "", "comma-separated routes to the other servers, nats://host:cluster-port")
	logFormat := fs.String("log-format", "text", "log format: json or text")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts := &server.Options{}
	if *config != "" {
		var err error
		if opts, err = server.ProcessConfigFile(*config); err != nil {
			return fmt.Errorf("natsd: %w", err)
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// Without a config file every flag applies, defaults included.
	apply := func(flag string) bool { return *config == "" || set[flag] }
	if apply("name") {
		opts.ServerName = *name
	}
	if apply("host") {
		opts.Host = *host
	}
	if apply("port") {
		opts.Port = *port
	}
	if apply("http-port") {
		opts.HTTPHost, opts.HTTPPort = *host, *httpPort
	}
	if apply("store-dir") {
		opts.StoreDir = *storeDir
	}
	if apply("cluster-port") && *clusterPort > 0 {
		opts.Cluster.Host, opts.Cluster.Port = *host, *clusterPort
	}
	if apply("cluster-name") && opts.Cluster.Port > 0 {
		opts.Cluster.Name = *clusterName
	}
	if apply("routes") && *routes != "" {
		opts.Routes = server.RoutesFromStr(*routes)
	}
	opts.JetStream = true
	opts.NoSigs = true // the command owns signals: ctx ends the server
	if opts.StoreDir == "" {
		return errors.New("natsd: -store-dir (or jetstream.store_dir in -config) is required")
	}
	if opts.Cluster.Port > 0 && opts.ServerName == "" {
		return errors.New("natsd: a clustered server needs -name (or server_name), unique in the cluster")
	}
	return runNATS(ctx, opts, newLogger(stderr, *logFormat, slog.LevelInfo), stdout)
}

// runNATS starts the server, reports readiness on stdout and shuts it down
// when ctx is done.
func runNATS(ctx context.Context, opts *server.Options, log *slog.Logger, stdout io.Writer) error {
	s, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("natsd: %w", err)
	}
	s.SetLoggerV2(natsLogger{log}, false, false, false)
	s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return errors.New("natsd: server not ready for connections within 30s")
	}
	fmt.Fprintf(stdout, "natsd %s ready: clients %s, JetStream store %s\n", s.Name(), s.ClientURL(), opts.StoreDir)
	<-ctx.Done()
	log.Info("natsd: shutting down")
	s.Shutdown()
	s.WaitForShutdown()
	return nil
}

// natsLogger sends the server's log to slog.
type natsLogger struct{ log *slog.Logger }

// Noticef logs at INFO.
func (l natsLogger) Noticef(format string, v ...any) { l.log.Info(fmt.Sprintf(format, v...)) }

// Warnf logs at WARN.
func (l natsLogger) Warnf(format string, v ...any) { l.log.Warn(fmt.Sprintf(format, v...)) }

// Fatalf logs at ERROR; the server stops itself.
func (l natsLogger) Fatalf(format string, v ...any) { l.log.Error(fmt.Sprintf(format, v...)) }

// Errorf logs at ERROR.
func (l natsLogger) Errorf(format string, v ...any) { l.log.Error(fmt.Sprintf(format, v...)) }

// Debugf drops debug output.
func (l natsLogger) Debugf(string, ...any) {}

// Tracef drops protocol traces.
func (l natsLogger) Tracef(string, ...any) {}
