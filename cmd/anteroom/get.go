package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/anteroom/anteroom/internal/salefile"
)

const getUsage = `usage: anteroom get sale ID [-o yaml|json]

Prints sale ID as a sales file (docs/sales-as-code.md) that
` + "`anteroom apply -f`" + ` takes back: every field of its configuration but
the node's own, and its published page. Secrets are never printed: a
file without them keeps the stored ones. The node and credentials are
those of apply (a viewer's API key is enough).

flags:
`

// get runs `anteroom get sale ID`.
func get(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, getUsage); fs.PrintDefaults() }
	client := staffFlags(fs, getenv)
	format := fs.String("o", "yaml", "the output: yaml or json")
	words, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(words) != 2 || words[0] != "sale" {
		fs.Usage()
		return errors.New("get: usage: anteroom get sale ID [-o yaml|json]")
	}
	if *format != "yaml" && *format != "json" {
		return fmt.Errorf("get: -o is yaml or json, not %q", *format)
	}
	live, _, err := client().live(ctx, words[1])
	if err != nil {
		return fmt.Errorf("get sale %s: %w", words[1], err)
	}
	if live == nil {
		return fmt.Errorf("get sale %s: no such sale", words[1])
	}
	out, err := salefile.Encode([]salefile.Sale{*live}, *format)
	if err != nil {
		return fmt.Errorf("get sale %s: %w", words[1], err)
	}
	_, err = stdout.Write(out)
	return err
}
