package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/web/staffapi"
)

// The demo's way into the staff console: `demo -keep` makes an admin
// account, demoAccount, with a random password nobody is told, and
// prints one-time sign-in links to it (staff.SignInLinks; the node serves
// them only because the demo asks, node.Config.DemoSignInLinks). A link
// signs in once, within consoleLinkTTL, from a browser on this machine
// only, and opens the console on the demo's sale.
const (
	demoAccount    = "demo"
	consoleLinkTTL = 10 * time.Minute
)

// openConsole creates demoAccount as an admin (it may change the rate,
// pause, read the report), through the admin API with the node's admin
// token, so the audit trail shows who made it. The sale is made first:
// once an admin account exists, the admin token may only manage accounts.
func openConsole(ctx context.Context, n *node.Node, ev string) error {
	var pw [24]byte
	if _, err := rand.Read(pw[:]); err != nil {
		return err
	}
	body := map[string]any{"name": demoAccount, "role": staff.Admin, "password": hex.EncodeToString(pw[:])}
	if err := adminCall(ctx, n.URL(), n.AdminToken, http.MethodPost, "/admin/accounts", body); err != nil {
		return fmt.Errorf("demo console account: %w", err)
	}
	return nil
}

// printConsoleLink prints the console's address and a new one-time
// sign-in link of demoAccount that opens it on sale ev.
func printConsoleLink(ctx context.Context, w io.Writer, n *node.Node, ev string) error {
	if n.SignInLinks == nil {
		return fmt.Errorf("demo console link: the node serves no sign-in links")
	}
	acc, err := staff.NewAccounts(n.Redis()).Get(ctx, demoAccount)
	if err != nil {
		return fmt.Errorf("demo console link: %w", err)
	}
	tok, err := n.SignInLinks.Mint(ctx, acc, time.Now(), consoleLinkTTL)
	if err != nil {
		return fmt.Errorf("demo console link: %w", err)
	}
	q := url.Values{"token": {tok}, "event": {ev}}
	fmt.Fprintf(w, "  staff console: %s/admin/?event=%s\n", n.URL(), url.QueryEscape(ev))
	fmt.Fprintf(w, "  sign in as %q (once, within %d minutes, from a browser on this machine): %s%s?%s\n",
		demoAccount, int(consoleLinkTTL.Minutes()), n.URL(), staffapi.SignInLinkPath, q.Encode())
	return nil
}
