package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/anteroom/anteroom/door/rules"
)

// rulesTable runs `anteroom rules-table`: it prints docs/configure.md's
// generated tables of the door rules' variables and functions, or with -w
// rewrites them between the rules markers of a file.
func rulesTable(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rules-table", flag.ContinueOnError)
	fs.SetOutput(stderr)
	write := fs.String("w", "", "rewrite the section between the "+rules.TableBegin+" and "+rules.TableEnd+" lines of this file instead of printing it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("rules-table: unexpected argument %q", fs.Arg(0))
	}
	if *write == "" {
		_, err := io.WriteString(stdout, rules.Table())
		return err
	}
	doc, err := os.ReadFile(*write)
	if err != nil {
		return err
	}
	out, err := rules.SpliceTable(string(doc))
	if err != nil {
		return errors.Join(fmt.Errorf("rules-table: %s", *write), err)
	}
	return os.WriteFile(*write, []byte(out), 0o644)
}
