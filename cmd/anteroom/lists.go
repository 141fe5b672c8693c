package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

const listsUsage = `usage: anteroom lists [flags] <command>

  ls                                   the lists: name, kind, entries, version
  create NAME --kind user|network|device|payment
  load NAME FILE [--append] [--dry-run] [--format csv|ndjson]
                                       replace the list with FILE's entries (or add them, --append;
                                       count them only, --dry-run); FILE "-" is stdin, streamed
  add NAME VALUE                       add one entry
  remove NAME VALUE                    remove one entry
  export NAME                          print the entries, one a line
  delete NAME                          delete the list (refused while a sale's door names it)

A sale's own list is named <event id>.<name>. The node is --url
(ANTEROOM_URL); the credentials a staff API key (--api-key,
ANTEROOM_API_KEY) or the admin token (--admin-token,
ANTEROOM_ADMIN_TOKEN; refused once an admin account exists). A change
the node's Redis replicas did not copy in time is saved and audited but
fails (503 not_replicated): run the same command again.

flags:
`

// lists manages the door's block and eligibility lists through a node's
// admin API (/admin/lists, docs/api.md "Lists"). Flags may come before or
// after the command's words. An upload streams the file, never reading it
// whole; an error answer prints the problem's detail (with the line of a
// malformed entry) and fails, a change the Redis replicas did not copy
// in time (503 not_replicated) too, saying it stands and to run the
// command again.
func lists(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lists", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, listsUsage); fs.PrintDefaults() }
	base := fs.String("url", "", "the node's base URL (default: ANTEROOM_URL, else http://127.0.0.1:8080)")
	apiKey := fs.String("api-key", "", "a staff API key, ak_… (default: ANTEROOM_API_KEY)")
	admin := envFlag(fs, getenv, "admin-token", "the admin token, when no API key is given (default: ANTEROOM_ADMIN_TOKEN)")
	kind := fs.String("kind", "", "create: what the list holds: user, network, device or payment")
	appendMode := fs.Bool("append", false, "load: add the file's entries to the list instead of replacing it")
	dryRun := fs.Bool("dry-run", false, "load: read and count the file, change nothing")
	format := fs.String("format", "", "load: csv or ndjson (default: from FILE's extension, .ndjson or .jsonl, else csv)")
	words, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	key := getenv("ANTEROOM_API_KEY")
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "api-key" {
			key = *apiKey // given, even empty: the environment's is not used
		}
	})
	c := listsClient{base: strings.TrimRight(cmp.Or(*base, getenv("ANTEROOM_URL"), "http://127.0.0.1:8080"), "/"),
		auth: cmp.Or(key, admin())}
	if len(words) == 0 {
		fs.Usage()
		return errors.New("lists: missing command")
	}
	want := func(n int, form string) error {
		if len(words) != n+1 {
			return fmt.Errorf("lists %s: usage: anteroom lists %s", words[0], form)
		}
		return nil
	}
	cmd := words[0]
	switch cmd {
	case "ls":
		if err := want(0, "ls"); err != nil {
			return err
		}
		return c.ls(ctx, stdout)
	case "create":
		if err := want(1, "create NAME --kind KIND"); err != nil {
			return err
		}
		if *kind == "" {
			return errors.New("lists create: --kind is required: user, network, device or payment")
		}
		body, _ := json.Marshal(map[string]string{"kind": *kind})
		var m listMeta
		if err := c.call(ctx, http.MethodPut, c.list(words[1]), "application/json", strings.NewReader(string(body)), -1, &m); err != nil {
			return fmt.Errorf("lists create: %w", err)
		}
		fmt.Fprintf(stdout, "created %s (%s)\n", m.Name, m.Kind)
		return nil
	case "load":
		if err := want(2, "load NAME FILE [--append] [--dry-run] [--format csv|ndjson]"); err != nil {
			return err
		}
		return c.load(ctx, words[1], words[2], *format, *appendMode, *dryRun, stdout)
	case "add", "remove":
		if err := want(2, cmd+" NAME VALUE"); err != nil {
			return err
		}
		method := http.MethodPut
		if cmd == "remove" {
			method = http.MethodDelete
		}
		var m listMeta
		if err := c.call(ctx, method, c.list(words[1])+"/entries/"+url.PathEscape(words[2]), "", nil, 0, &m); err != nil {
			return fmt.Errorf("lists %s: %w", cmd, err)
		}
		fmt.Fprintf(stdout, "%s: %d entries (version %d)\n", m.Name, m.Count, m.Version)
		return nil
	case "export":
		if err := want(1, "export NAME"); err != nil {
			return err
		}
		if err := c.call(ctx, http.MethodGet, c.list(words[1])+"/entries", "", nil, 0, stdout); err != nil {
			return fmt.Errorf("lists export: %w", err)
		}
		return nil
	case "delete":
		if err := want(1, "delete NAME"); err != nil {
			return err
		}
		if err := c.call(ctx, http.MethodDelete, c.list(words[1]), "", nil, 0, nil); err != nil {
			return fmt.Errorf("lists delete: %w", err)
		}
		fmt.Fprintf(stdout, "deleted %s\n", words[1])
		return nil
	}
	fs.Usage()
	return fmt.Errorf("lists: unknown command %q", cmd)
}

// parseInterleaved parses fs's flags wherever they stand among args and
// returns the other words in order ("--" ends the flags).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var words []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(words, rest...), nil
		}
		if len(rest) == 0 {
			break
		}
		words, args = append(words, rest[0]), rest[1:]
	}
	return words, nil
}

// listMeta is a list's metadata as the API answers it.
type listMeta struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Count   int64  `json:"count"`
	Version int64  `json:"version"`
}

// listsClient calls a node's list routes.
type listsClient struct {
	base, auth string
}

func (c listsClient) list(name string) string { return c.base + "/admin/lists/" + url.PathEscape(name) }

func (c listsClient) ls(ctx context.Context, stdout io.Writer) error {
	var out struct {
		Lists []listMeta `json:"lists"`
	}
	if err := c.call(ctx, http.MethodGet, c.base+"/admin/lists", "", nil, 0, &out); err != nil {
		return fmt.Errorf("lists ls: %w", err)
	}
	fmt.Fprintf(stdout, "%-40s %-8s %10s %8s\n", "NAME", "KIND", "ENTRIES", "VERSION")
	for _, m := range out.Lists {
		fmt.Fprintf(stdout, "%-40s %-8s %10d %8d\n", m.Name, m.Kind, m.Count, m.Version)
	}
	return nil
}

// load streams file ("-": stdin) to the list's bulk upload.
func (c listsClient) load(ctx context.Context, name, file, format string, appendMode, dryRun bool, stdout io.Writer) error {
	var body io.Reader = os.Stdin
	size := int64(-1) // stdin: chunked
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return fmt.Errorf("lists load: %w", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			size = st.Size()
		}
		body = f
	}
	if format == "" {
		format = "csv"
		if ext := strings.ToLower(filepath.Ext(file)); ext == ".ndjson" || ext == ".jsonl" {
			format = "ndjson"
		}
	}
	ct := map[string]string{"csv": "text/csv", "ndjson": "application/x-ndjson"}[format]
	if ct == "" {
		return fmt.Errorf("lists load: --format must be csv or ndjson, not %q", format)
	}
	q := url.Values{"format": {format}, "mode": {"replace"}}
	if appendMode {
		q.Set("mode", "append")
	}
	if dryRun {
		q.Set("dry_run", "true")
	}
	var out struct {
		Read       int64    `json:"read"`
		Added      int64    `json:"added"`
		Duplicates int64    `json:"duplicates"`
		DryRun     bool     `json:"dry_run"`
		List       listMeta `json:"list"`
	}
	if err := c.call(ctx, http.MethodPost, c.list(name)+"/entries?"+q.Encode(), ct, body, size, &out); err != nil {
		return fmt.Errorf("lists load: %w", err)
	}
	if out.DryRun {
		fmt.Fprintf(stdout, "dry run, nothing changed: read %d, would add %d, duplicates %d; %s would have %d entries\n",
			out.Read, out.Added, out.Duplicates, out.List.Name, out.List.Count)
		return nil
	}
	fmt.Fprintf(stdout, "read %d, added %d, duplicates %d; %s now has %d entries (version %d)\n",
		out.Read, out.Added, out.Duplicates, out.List.Name, out.List.Count, out.List.Version)
	return nil
}

// call sends one request (body of length size, -1 unknown) and decodes a
// JSON answer into out, or copies a text answer to out when it is an
// io.Writer. An error answer is the problem's detail, with its line.
func (c listsClient) call(ctx context.Context, method, u, contentType string, body io.Reader, size int64, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.ContentLength = size
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.auth != "" {
		req.Header.Set("Authorization", "Bearer "+c.auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return problemOf(resp)
	}
	switch o := out.(type) {
	case nil:
		return nil
	case io.Writer:
		if _, err := io.Copy(o, resp.Body); err != nil {
			return fmt.Errorf("the answer was cut short: %w", err)
		}
		return nil
	default:
		return json.NewDecoder(resp.Body).Decode(out)
	}
}

// problemOf is an error answer as an error: its detail (and line), or
// its status; a change saved but not replicated says what to do.
func problemOf(resp *http.Response) error {
	var p struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
		Line   int    `json:"line"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(raw, &p) != nil || p.Detail == "" {
		return fmt.Errorf("%s", resp.Status)
	}
	if p.Code == "not_replicated" {
		return errors.New("the change is saved and audited, but the node's Redis replicas did not copy it in time, so a Redis failover now would lose it: run the same command again (503 not_replicated)")
	}
	msg := fmt.Sprintf("%d %s: %s", resp.StatusCode, p.Code, p.Detail)
	if p.Line > 0 && !strings.Contains(p.Detail, fmt.Sprintf("line %d", p.Line)) {
		msg = fmt.Sprintf("%d %s: line %d: %s", resp.StatusCode, p.Code, p.Line, p.Detail)
	}
	return errors.New(msg)
}
