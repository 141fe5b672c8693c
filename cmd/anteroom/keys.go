package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/anteroom/anteroom/push"
	"github.com/anteroom/anteroom/tokens"
)

const keysUsage = `usage: anteroom keys <rotate|retire|list|vapid> [flags]

Manage the admission signing key directory shared by all nodes
(ANTEROOM_SIGNING_KEYS, default DATA_DIR/keys). Nodes re-read it every
ANTEROOM_KEY_RELOAD (10s).

  rotate                 add a key and make it the signer; old keys keep verifying
  retire -max-age D      remove keys that stopped signing more than D ago
  list                   show the keys, the active one first
  vapid -out FILE        write a new Web Push VAPID private key to FILE (mode
                         0600, never overwritten) and print its public key;
                         give FILE to every node as ANTEROOM_PUSH_VAPID_KEY

Rotate well before a sale (gateways cache the JWKS). Retire with a max-age of
at least the longest admission_ttl_seconds + the key reload interval + 5s of
leeway: tokens signed by a retired key are refused from the next reload on.
`

// keys runs `anteroom keys`: rotation, retirement and listing of the
// admission signing keys. now is the clock recorded in the directory.
func keys(args []string, getenv func(string) string, now func() time.Time, stdout, stderr io.Writer) error {
	switch {
	case len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help"):
		fmt.Fprint(stdout, keysUsage)
		return nil
	case len(args) == 0 || strings.HasPrefix(args[0], "-"):
		fmt.Fprint(stderr, keysUsage)
		return errors.New("keys: missing subcommand")
	}
	cmd := args[0]
	flags := flag.NewFlagSet("keys "+cmd, flag.ContinueOnError)
	flags.SetOutput(stderr)
	dataDir := flags.String("data-dir", envSetting(getenv, "data-dir"), "data directory (ANTEROOM_DATA_DIR)")
	dir := flags.String("signing-keys", envSetting(getenv, "signing-keys"), "signing key directory; empty: DATA_DIR/keys (ANTEROOM_SIGNING_KEYS)")
	var maxAge *time.Duration
	var out *string
	switch cmd {
	case "vapid":
		out = flags.String("out", "", "file to write the VAPID private key to (required; must not exist)")
	case "rotate", "list":
	case "retire":
		maxAge = flags.Duration("max-age", 0, "remove keys that stopped signing longer ago than this (required; ≥ longest admission TTL + reload interval + leeway)")
	default:
		fmt.Fprint(stderr, keysUsage)
		return fmt.Errorf("keys: unknown subcommand %q", cmd)
	}
	if err := flags.Parse(args[1:]); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("keys %s: unexpected argument %q", cmd, flags.Arg(0))
	}
	if out != nil {
		return writeVAPIDKey(*out, stdout)
	}
	if *dir == "" {
		*dir = filepath.Join(*dataDir, "keys")
	}
	switch cmd {
	case "rotate":
		return rotateKeys(*dir, now(), stdout)
	case "retire":
		if *maxAge <= 0 {
			return errors.New("keys retire: -max-age is required and must be positive, e.g. -max-age 15m")
		}
		return retireKeys(*dir, now(), *maxAge, stdout)
	}
	return listKeys(*dir, stdout)
}

// openExisting opens a key directory that must already hold an active key,
// so that a mistyped path is reported instead of silently getting a key.
func openExisting(dir string) (*tokens.KeySet, error) {
	if _, err := os.Stat(filepath.Join(dir, "active")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no signing key directory at %s (set -signing-keys or ANTEROOM_SIGNING_KEYS)", dir)
		}
		return nil, err
	}
	return tokens.OpenKeyDir(dir)
}

func rotateKeys(dir string, now time.Time, stdout io.Writer) error {
	if _, err := os.Stat(filepath.Join(dir, "active")); errors.Is(err, fs.ErrNotExist) {
		ks, err := tokens.OpenKeyDir(dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created %s with its first key\nactive %s\n", dir, ks.Active())
		return nil
	}
	ks, err := openExisting(dir)
	if err != nil {
		return err
	}
	old := ks.Active()
	kid, err := ks.Rotate(now)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "active %s\nprevious %s now only verifies; retire it once its tokens have expired\n", kid, old)
	return nil
}

func retireKeys(dir string, now time.Time, maxAge time.Duration, stdout io.Writer) error {
	ks, err := openExisting(dir)
	if err != nil {
		return err
	}
	removed, err := ks.Retire(now, maxAge)
	for _, kid := range removed {
		fmt.Fprintf(stdout, "retired %s\n", kid)
	}
	if err != nil {
		return err
	}
	if len(removed) == 0 {
		fmt.Fprintln(stdout, "nothing to retire")
	}
	fmt.Fprintf(stdout, "%d key(s) left, active %s\n", len(ks.Kids()), ks.Active())
	return nil
}

func listKeys(dir string, stdout io.Writer) error {
	ks, err := openExisting(dir)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KID\tSTATE\tINACTIVE SINCE")
	active := ks.Active()
	for _, kid := range ks.Kids() {
		if kid == active {
			fmt.Fprintf(tw, "%s\tactive\t-\n", kid)
			continue
		}
		// <kid>.inactive records when the key stopped signing (see
		// tokens.KeySet); a missing record is stamped by the next retire.
		since := "unknown"
		if b, err := os.ReadFile(filepath.Join(dir, kid+".inactive")); err == nil {
			since = strings.TrimSpace(string(b))
		}
		fmt.Fprintf(tw, "%s\tverify-only\t%s\n", kid, since)
	}
	return tw.Flush()
}

// writeVAPIDKey writes a new VAPID private key to path, which must not
// exist, readable by its owner only, and prints the public key.
func writeVAPIDKey(path string, stdout io.Writer) error {
	if path == "" {
		return errors.New("keys vapid: -out is required")
	}
	key, err := push.GenerateKey()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("keys vapid: %w", err)
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		_ = f.Close()
		return fmt.Errorf("keys vapid: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("keys vapid: %w", err)
	}
	svc, err := push.New(nil, push.Config{PrivateKey: key, Subject: "mailto:x"})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\npublic key (the pages' applicationServerKey, also at GET /events/{id}/push): %s\n", path, svc.PublicKey())
	return nil
}
