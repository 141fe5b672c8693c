package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/anteroom/anteroom/internal/settings"
)

// regenerate is how to bring docs/configure.md's settings table back in line with
// the registry, from the repository's root.
const regenerate = "go run ./cmd/anteroom settings-table -w docs/configure.md"

// settingsSection is the text docs/configure.md holds between its settings
// markers: how to read the table, then the table of the registry.
func settingsSection() string {
	return "Every setting is an environment variable and a flag of `anteroom serve`;\n" +
		"`anteroom worker` and `anteroom reconcile` take all but the two drain\n" +
		"settings. A flag wins over its variable, a set variable over the default.\n" +
		"`serve` and `worker` log the settings in effect at start (`settings in\n" +
		"effect`), secrets and URL credentials redacted. This table is generated\n" +
		"from the registry in `cmd/anteroom/settings.go`: edit it there, then run\n" +
		"`" + regenerate + "` (or `go generate ./cmd/anteroom`).\n\n" +
		settings.Markdown(registry(&options{})) + "\n"
}

// settingsTable runs `anteroom settings-table`: it prints docs/configure.md's
// generated settings section, or with -w rewrites it between the settings
// markers of a file.
func settingsTable(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("settings-table", flag.ContinueOnError)
	fs.SetOutput(stderr)
	write := fs.String("w", "", "rewrite the section between the "+settings.BeginMarker+" and "+settings.EndMarker+" lines of this file instead of printing it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("settings-table: unexpected argument %q", fs.Arg(0))
	}
	if err := settings.Check(registry(&options{})); err != nil {
		return err
	}
	if *write == "" {
		_, err := io.WriteString(stdout, settingsSection())
		return err
	}
	doc, err := os.ReadFile(*write)
	if err != nil {
		return err
	}
	out, err := settings.Splice(string(doc), settingsSection())
	if err != nil {
		return errors.Join(fmt.Errorf("settings-table: %s", *write), err)
	}
	return os.WriteFile(*write, []byte(out), 0o644)
}
