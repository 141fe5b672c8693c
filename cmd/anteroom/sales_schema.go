package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/anteroom/anteroom/internal/salefile"
)

//go:generate go run . sales-schema -w ../../docs/sales.schema.json

// salesSchemaFile is where the sales file's JSON Schema is kept, from
// the repository's root.
const salesSchemaFile = "docs/sales.schema.json"

// salesSchema runs `anteroom sales-schema`: it prints the sales file's
// JSON Schema (salefile.Schema), or with -w FILE writes it there (CI
// checks that docs/sales.schema.json is current).
func salesSchema(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sales-schema", flag.ContinueOnError)
	fs.SetOutput(stderr)
	write := fs.String("w", "", "write the schema to this file ("+salesSchemaFile+") instead of printing it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("sales-schema: unexpected argument %q", fs.Arg(0))
	}
	schema, err := salefile.Schema()
	if err != nil {
		return err
	}
	if *write == "" {
		_, err := io.Copy(stdout, bytes.NewReader(schema))
		return err
	}
	return os.WriteFile(*write, schema, 0o644)
}
