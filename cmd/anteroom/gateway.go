package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/failopenmap"
)

// gateway runs the gateway-side tools. Today one: `gateway fail-open`,
// which prints the nginx map body of a fail-open deadline for when
// anteroom itself cannot answer (docs/operate.md, "When anteroom cannot
// answer").
func gateway(args []string, now func() time.Time, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "fail-open" {
		fmt.Fprintln(stderr, "usage: anteroom gateway fail-open -until <RFC 3339> | -off")
		return errors.New("gateway needs a tool: fail-open")
	}
	fs := flag.NewFlagSet("gateway fail-open", flag.ContinueOnError)
	fs.SetOutput(stderr)
	until := fs.String("until", "", "the deadline (RFC 3339): in the future, at most 24h ahead; while the gate cannot answer, nginx lets visitors through until then")
	off := fs.Bool("off", false, "no fail-open: when the gate cannot answer, nginx fails closed (the file to install at first)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("gateway fail-open: unexpected argument %q", fs.Arg(0))
	}
	generated := "anteroom gateway fail-open " + strings.Join(args[1:], " ")
	switch {
	case *off && *until != "":
		return errors.New("gateway fail-open: -until or -off, not both")
	case *off:
		fmt.Fprint(stdout, failopenmap.Map(time.Time{}, generated))
		return nil
	case *until == "":
		return errors.New("gateway fail-open needs -until <RFC 3339> (or -off)")
	}
	u, err := time.Parse(time.RFC3339, *until)
	if err != nil {
		return fmt.Errorf("gateway fail-open -until %q: not an RFC 3339 time", *until)
	}
	at := now()
	switch {
	case !u.After(at):
		return fmt.Errorf("gateway fail-open -until %s: must be in the future (now is %s)", *until, at.UTC().Format(time.RFC3339))
	case u.Sub(at) > event.MaxFailOpen:
		return fmt.Errorf("gateway fail-open -until %s: must be at most %s ahead", *until, event.MaxFailOpen)
	}
	fmt.Fprint(stdout, failopenmap.Map(u, generated))
	fmt.Fprintf(stderr, "write this to %s and reload nginx (nginx -s reload): visitors pass when the gate cannot answer, until %s; then nginx fails closed by itself\n",
		failopenmap.Path, u.UTC().Truncate(time.Second).Format(time.RFC3339))
	return nil
}
