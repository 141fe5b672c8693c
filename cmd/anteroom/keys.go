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

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/push"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web"
)

const keysUsage = `usage: anteroom keys <rotate|promote|retire|list|vapid> [flags]

Manage the admission signing key directory shared by all nodes
(ANTEROOM_SIGNING_KEYS, default DATA_DIR/keys). Nodes re-read it every
ANTEROOM_KEY_RELOAD (10s).

A rotation runs in three stages, so that no gateway refuses a valid token:

  rotate                 1. publish a next key in the JWKS; nodes keep signing
                         with the active key
  promote                2. make the next key the signer; refused, naming the
                         time left, until the JWKS cache age (5m) + the key
                         reload + 5s have passed since rotate. The old key is
                         retiring: it verifies its tokens, signs no more
  retire                 3. remove retiring keys that stopped signing more than
                         -max-age ago; refused, naming the time left, while
                         their tokens may be valid. Default -max-age: the
                         longest admission TTL (1h) + the key reload + 5s
  list                   show the keys and their stages
  promote -now           a new signer at once, for a leaked key: gateways refuse
                         its tokens until they fetch the JWKS again (up to
                         their refetch interval)
  vapid -out FILE        write a new Web Push VAPID private key to FILE (mode
                         0600, never overwritten) and print its public key;
                         give FILE to every node as ANTEROOM_PUSH_VAPID_KEY
`

// fetchMargin covers a JWKS fetch under way while a key is published, and
// clock skew between the operator's machine and the nodes.
const fetchMargin = 5 * time.Second

// keysCmd is one `anteroom keys` run on a key directory.
type keysCmd struct {
	dir    string
	now    time.Time
	reload time.Duration // the nodes' key reload interval
	stdout io.Writer
}

// promoteWait is how long after rotate a next key may sign: by then every
// node publishes it and no cache holds a JWKS without it.
func (c keysCmd) promoteWait() time.Duration { return web.JWKSMaxAge + c.reload + fetchMargin }

// retireAge is the default -max-age: by then no token of a retiring key is
// valid anywhere, its last node having stopped signing one reload after
// promote.
func (c keysCmd) retireAge() time.Duration {
	return event.MaxAdmissionTTLSeconds*time.Second + c.reload + tokens.DefaultLeeway
}

// keys runs `anteroom keys`: the stages of a rotation, and listing, of the
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
	reload, err := time.ParseDuration(envSetting(getenv, "key-reload"))
	if err != nil || reload <= 0 {
		return fmt.Errorf("keys: ANTEROOM_KEY_RELOAD %q: want a positive duration such as 10s", envSetting(getenv, "key-reload"))
	}
	var maxAge *time.Duration
	var out *string
	var atOnce *bool
	switch cmd {
	case "vapid":
		out = flags.String("out", "", "file to write the VAPID private key to (required; must not exist)")
	case "rotate", "list":
	case "promote":
		atOnce = flags.Bool("now", false, "make a new key the signer at once, for a leaked key (gateways refuse its tokens until they fetch the JWKS again)")
	case "retire":
		maxAge = flags.Duration("max-age", 0, "remove keys that stopped signing longer ago than this; default: the longest admission TTL + key reload + leeway")
	default:
		fmt.Fprint(stderr, keysUsage)
		return fmt.Errorf("keys: unknown subcommand %q", cmd)
	}
	flags.DurationVar(&reload, "key-reload", reload, "the nodes' key reload interval (ANTEROOM_KEY_RELOAD)")
	if err := flags.Parse(args[1:]); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("keys %s: unexpected argument %q", cmd, flags.Arg(0))
	}
	if out != nil {
		return writeVAPIDKey(*out, stdout)
	}
	if reload <= 0 {
		return fmt.Errorf("keys %s: -key-reload must be positive", cmd)
	}
	if *dir == "" {
		*dir = filepath.Join(*dataDir, "keys")
	}
	c := keysCmd{dir: *dir, now: now(), reload: reload, stdout: stdout}
	switch cmd {
	case "rotate":
		return c.rotate()
	case "promote":
		return c.promote(*atOnce)
	case "retire":
		switch {
		case *maxAge < 0:
			return errors.New("keys retire: -max-age must be positive, e.g. -max-age 1h15s")
		case *maxAge == 0:
			*maxAge = c.retireAge()
		}
		return c.retire(*maxAge)
	}
	return c.list()
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

// when prints an instant and how far it is from now.
func (c keysCmd) when(t time.Time) string {
	s := t.UTC().Format(time.RFC3339)
	if d := t.Sub(c.now); d > 0 {
		s += " (in " + d.Round(time.Second).String() + ")"
	}
	return s
}

func (c keysCmd) rotate() error {
	if _, err := os.Stat(filepath.Join(c.dir, "active")); errors.Is(err, fs.ErrNotExist) {
		ks, err := tokens.OpenKeyDir(c.dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "created %s with its first key\nactive %s\n", c.dir, ks.Active())
		return nil
	}
	ks, err := openExisting(c.dir)
	if err != nil {
		return err
	}
	kid, err := ks.PublishNext(c.now)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "next %s\npublished in the JWKS from the nodes' next reload; they keep signing with %s\npromote it from %s: anteroom keys promote\n",
		kid, ks.Active(), c.when(c.now.Add(c.promoteWait())))
	return nil
}

func (c keysCmd) promote(atOnce bool) error {
	ks, err := openExisting(c.dir)
	if err != nil {
		return err
	}
	old := ks.Active()
	var kid string
	if atOnce {
		kid, err = ks.Rotate(c.now)
	} else {
		kid, _, err = ks.Promote(c.now, c.promoteWait())
	}
	if errors.Is(err, tokens.ErrNoNext) {
		return errors.New("keys promote: no next key: run anteroom keys rotate first (or promote -now for a leaked key)")
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "active %s (nodes sign with it from their next reload)\nretiring %s: it verifies its tokens until retired; retire it from %s: anteroom keys retire\n",
		kid, old, c.when(c.now.Add(c.retireAge())))
	return nil
}

func (c keysCmd) retire(maxAge time.Duration) error {
	ks, err := openExisting(c.dir)
	if err != nil {
		return err
	}
	removed, err := ks.Retire(c.now, maxAge)
	for _, kid := range removed {
		fmt.Fprintf(c.stdout, "retired %s\n", kid)
	}
	if err != nil {
		return err
	}
	var waiting []string
	for _, st := range ks.States() {
		if st.Stage == tokens.StageRetiring {
			at := st.Since.Add(maxAge)
			waiting = append(waiting, fmt.Sprintf("%s may still have valid tokens until %s (time left %s)", st.Kid, at.UTC().Format(time.RFC3339), at.Sub(c.now).Round(time.Second)))
		}
	}
	if len(removed) == 0 && len(waiting) > 0 {
		return fmt.Errorf("keys retire: %w: %s", tokens.ErrTooSoon, strings.Join(waiting, "; "))
	}
	for _, w := range waiting {
		fmt.Fprintf(c.stdout, "kept %s\n", w)
	}
	if len(removed) == 0 {
		fmt.Fprintln(c.stdout, "nothing to retire")
	}
	fmt.Fprintf(c.stdout, "%d key(s) left, active %s\n", len(ks.Kids()), ks.Active())
	return nil
}

func (c keysCmd) list() error {
	ks, err := openExisting(c.dir)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KID\tSTAGE\tSINCE\tNEXT STEP")
	for _, st := range ks.States() {
		since, step := "-", "-"
		if !st.Since.IsZero() {
			since = st.Since.UTC().Format(time.RFC3339)
		}
		switch {
		case st.Stage == tokens.StageNext:
			step = "promote from " + c.when(st.Since.Add(c.promoteWait()))
		case st.Stage == tokens.StageRetiring && st.Since.IsZero():
			step = "retire stamps it, then waits " + c.retireAge().String()
		case st.Stage == tokens.StageRetiring:
			step = "retire from " + c.when(st.Since.Add(c.retireAge()))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", st.Kid, st.Stage, since, step)
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
