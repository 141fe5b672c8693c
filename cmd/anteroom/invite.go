package main

import (
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/tokens"
)

// invite prints a signed enqueue token that lets one user join one
// invite-only event (limits.invite_only) until it expires; with -lane it
// also puts them in that lane of the event (event.Lane). It signs with
// the deployment's ticket secret, as every node verifies: from
// -ticket-secret (ANTEROOM_TICKET_SECRET) or DATA_DIR/ticket-secret. The
// user presents it on join in the X-Invite-Token header, or the page
// forwards it from the link's ?invite= parameter.
func invite(args []string, getenv func(string) string, now func() time.Time, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("invite", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ev := fs.String("event", "", "the event id")
	user := fs.String("user", "", "the invited user id, as the node's identity names them")
	lane := fs.String("lane", "", "the lane (event lanes[].name) the invite puts the user in; empty: no lane")
	ttl := fs.Duration("ttl", 7*24*time.Hour, "how long the invite stays valid")
	secretHex := envFlag(fs, getenv, "ticket-secret", "hex ticket secret shared by the nodes (default: ANTEROOM_TICKET_SECRET)")
	dataDir := fs.String("data-dir", envSetting(getenv, "data-dir"), "data dir holding ticket-secret when -ticket-secret is empty (ANTEROOM_DATA_DIR)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case !event.ValidID(*ev):
		return errors.New("invite needs --event: an event id")
	case *user == "" || len(*user) > 128 || strings.ContainsAny(*user, " \t\r\n"):
		return errors.New("invite needs --user: 1 to 128 printable characters without spaces")
	case len(*lane) > 32 || strings.ContainsAny(*lane, ". \t\r\n"):
		return errors.New("invite --lane must be a lane name: at most 32 characters, no '.' or spaces")
	case *ttl <= 0:
		return errors.New("invite --ttl must be positive")
	}
	secret, err := inviteSecret(secretHex(), *dataDir)
	if err != nil {
		return err
	}
	inv, err := tokens.NewInvites(secret)
	if err != nil {
		return err
	}
	exp := now().Add(*ttl)
	fmt.Fprintln(stdout, inv.SignLane(*ev, *user, *lane, exp))
	fmt.Fprintf(stderr, "invite for user %q to event %q, valid until %s; send it as %s on join or as /e/%s?invite=<token>\n",
		*user, *ev, exp.UTC().Format(time.RFC3339), tokens.InviteHeader, *ev)
	return nil
}

// inviteSecret reads the ticket secret from hex, or from the data dir's
// file, which it never creates: a fresh secret would match no node.
func inviteSecret(hexSecret, dataDir string) ([]byte, error) {
	if hexSecret != "" {
		b, err := hex.DecodeString(hexSecret)
		if err != nil {
			return nil, errors.New("ticket secret: not hex")
		}
		return b, nil
	}
	path := filepath.Join(dataDir, "ticket-secret")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no ticket secret: pass -ticket-secret or point -data-dir at a node's data dir (%v)", err)
	}
	return tokens.LoadOrCreateSecret(path)
}
