package main

import (
	"bytes"
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
	"strings"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/salefile"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/anteroom/anteroom/web/pages"
)

const applyUsage = `usage: anteroom apply -f FILE [--dry-run] [--rotate-secrets]

Creates or updates the sales of FILE (YAML or JSON; "-" is stdin; the
format: docs/sales-as-code.md, docs/sales.schema.json) through a node's
admin API, each sale whole or not at all, and says of each: created,
updated, unchanged or refused (with the node's reason). --dry-run
changes nothing and prints what would change, field by field
(old → new; secrets never shown).

Exit status: 0 nothing changed (or would change), 2 something changed
(or would), 1 an error: the file is refused whole when a sale in it is
malformed or invalid (nothing applied); a sale the node refuses (a
locked field, an unknown list) is refused alone, the others applied.

The node is --url (ANTEROOM_URL); the credentials a staff API key
(--api-key, ANTEROOM_API_KEY) of the operator role or above, or the
admin token (--admin-token, ANTEROOM_ADMIN_TOKEN; refused once an admin
account exists). Secrets are named in the file as ${NAME} and read from
this command's environment.

flags:
`

// errChanged ends apply with exit status 2: something changed (or, in a
// dry run, would).
var errChanged = exitStatus{code: 2}

// exitStatus is an error that ends the command with its own status;
// main prints msg, when there is one.
type exitStatus struct {
	code int
	msg  string
}

func (e exitStatus) Error() string { return cmp.Or(e.msg, fmt.Sprintf("exit status %d", e.code)) }

// staffFlags adds the node and credential flags of a command that calls
// the admin API (as `anteroom lists` does) and returns the client they
// make once fs is parsed.
func staffFlags(fs *flag.FlagSet, getenv func(string) string) func() salesClient {
	base := fs.String("url", "", "the node's base URL (default: ANTEROOM_URL, else http://127.0.0.1:8080)")
	apiKey := fs.String("api-key", "", "a staff API key, ak_… (default: ANTEROOM_API_KEY)")
	admin := envFlag(fs, getenv, "admin-token", "the admin token, when no API key is given (default: ANTEROOM_ADMIN_TOKEN)")
	return func() salesClient {
		key := getenv("ANTEROOM_API_KEY")
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "api-key" {
				key = *apiKey // given, even empty: the environment's is not used
			}
		})
		return salesClient{base: strings.TrimRight(cmp.Or(*base, getenv("ANTEROOM_URL"), "http://127.0.0.1:8080"), "/"), auth: cmp.Or(key, admin())}
	}
}

// apply runs `anteroom apply`.
func apply(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, applyUsage); fs.PrintDefaults() }
	client := staffFlags(fs, getenv)
	file := fs.String("f", "", "the sales file (YAML or JSON; - is stdin)")
	dryRun := fs.Bool("dry-run", false, "change nothing: print what would change")
	rotate := fs.Bool("rotate-secrets", false, "send every secret the file names, replacing the stored ones (otherwise a stored secret is kept)")
	words, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(words) > 0 {
		return fmt.Errorf("apply: unexpected argument %q", words[0])
	}
	if *file == "" {
		fs.Usage()
		return errors.New("apply: -f FILE is required")
	}
	var data []byte
	if *file == "-" {
		data, err = io.ReadAll(io.LimitReader(os.Stdin, 64<<20))
	} else {
		data, err = os.ReadFile(*file)
	}
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	sales, err := salefile.Decode(data, getenv)
	if err != nil {
		return fmt.Errorf("apply: %s: %w (nothing applied)", *file, err)
	}
	// Every page as the node will judge it, before any sale is touched.
	for i := range sales {
		s := &sales[i]
		if err := pages.CheckPage(&s.Config, &s.Page, time.Now()); err != nil {
			why := err.Error()
			if p := (*kit.Problem)(nil); errors.As(err, &p) {
				why = p.Detail // the node's own words, as its answer would say
			}
			return fmt.Errorf("apply: %s: sale %s (line %d): %s (nothing applied)", *file, s.Config.ID, s.Line, why)
		}
	}
	c := client()
	var refused, changed int
	for i := range sales {
		r := c.applySale(ctx, &sales[i], *dryRun, *rotate)
		fmt.Fprintf(stdout, "sale %s: %s\n", sales[i].Config.ID, r.outcome)
		fmt.Fprint(stdout, salefile.Format(r.changes, "  "))
		switch {
		case r.failed:
			refused++
		case len(r.changes) > 0:
			changed++
		}
	}
	if refused > 0 {
		return fmt.Errorf("apply: %d of %d sales refused or failed (the others applied)", refused, len(sales))
	}
	if changed > 0 {
		return errChanged
	}
	return nil
}

// applied is what apply did to one sale.
type applied struct {
	outcome string
	changes []salefile.Change
	failed  bool
}

// applySale brings one sale to want. The configuration is saved by one
// PUT, which the node applies whole or not at all (validation, the
// locks by Redis TIME, the stock, the door's lists). A page is saved
// as a draft first (checked as the live page would run it, not yet
// shown), then the configuration, then the draft is published: a
// refused draft or configuration puts the previous draft back; a
// refused publish puts the previous configuration back. A new sale is
// created before its page (a page needs its sale); apply checked every
// page first (pages.CheckPage), so only a node of another version could
// still refuse it, leaving it created with the built-in page, and
// saying so.
func (c salesClient) applySale(ctx context.Context, want *salefile.Sale, dryRun, rotate bool) applied {
	id := want.Config.ID
	fail := func(format string, a ...any) applied {
		return applied{outcome: "refused: " + fmt.Sprintf(format, a...), failed: true}
	}
	live, draft, err := c.live(ctx, id)
	if err != nil {
		return fail("%v", err)
	}
	changes, send, err := salefile.Diff(live, want, rotate)
	if err != nil {
		return fail("%v", err)
	}
	verb := "updated"
	if live == nil {
		verb = "created"
	}
	switch {
	case len(changes) == 0:
		return applied{outcome: "unchanged"}
	case dryRun:
		return applied{outcome: "would be " + verb + " (dry run)", changes: changes}
	}
	var page, config bool
	for _, ch := range changes {
		if ch.Path == "page" || strings.HasPrefix(ch.Path, "page.") {
			page = true
		} else {
			config = true
		}
	}
	body, err := want.Body(send)
	if err != nil {
		return fail("%v", err)
	}
	if live == nil {
		if err := c.put(ctx, "/admin/events/"+url.PathEscape(id), body, nil); err != nil {
			return fail("%v", err)
		}
		if page {
			if err := c.publish(ctx, id, want.PageJSON()); err != nil {
				return applied{outcome: fmt.Sprintf("created, but its page was refused (the sale shows the built-in page; fix the page and apply again): %v", err), changes: changes, failed: true}
			}
		}
		return applied{outcome: verb, changes: changes}
	}
	var sha string
	if page {
		var out struct {
			DraftSHA256 string `json:"draft_sha256"`
		}
		if err := c.put(ctx, pagePath(id), want.PageJSON(), &out); err != nil {
			return fail("%v", err)
		}
		sha = out.DraftSHA256
	}
	restoreDraft := func() {
		if page && draft != nil {
			raw, _ := json.Marshal(draft)
			_ = c.put(ctx, pagePath(id), raw, nil) // best effort: a draft is never shown
		}
	}
	if config {
		if err := c.put(ctx, "/admin/events/"+url.PathEscape(id), body, nil); err != nil {
			restoreDraft()
			return fail("%v", err)
		}
	}
	if page {
		pub, _ := json.Marshal(map[string]string{"draft_sha256": sha})
		if err := c.post(ctx, pagePath(id)+"/publish", pub); err != nil {
			restoreDraft()
			if config {
				old, berr := live.Body(nil)
				if berr == nil {
					berr = c.put(ctx, "/admin/events/"+url.PathEscape(id), old, nil)
				}
				if berr != nil {
					return fail("%v; and putting the previous configuration back failed, the sale is half applied: %v", err, berr)
				}
				return fail("%v (the previous configuration is put back)", err)
			}
			return fail("%v", err)
		}
	}
	return applied{outcome: verb, changes: changes}
}

func pagePath(id string) string { return "/admin/events/" + url.PathEscape(id) + "/page" }

// publish saves page as the draft of sale id and publishes exactly it.
func (c salesClient) publish(ctx context.Context, id string, page []byte) error {
	var out struct {
		DraftSHA256 string `json:"draft_sha256"`
	}
	if err := c.put(ctx, pagePath(id), page, &out); err != nil {
		return err
	}
	pub, _ := json.Marshal(map[string]string{"draft_sha256": out.DraftSHA256})
	return c.post(ctx, pagePath(id)+"/publish", pub)
}

// live reads sale id as the node has it: nil when there is none; and
// its page's draft.
func (c salesClient) live(ctx context.Context, id string) (*salefile.Sale, *event.Page, error) {
	var view struct {
		Config event.Config `json:"config"`
	}
	status, err := c.get(ctx, "/admin/events/"+url.PathEscape(id), &view)
	if status == http.StatusNotFound {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var pages struct {
		Draft     *event.Page `json:"draft"`
		Published *event.Page `json:"published"`
	}
	if _, err := c.get(ctx, pagePath(id), &pages); err != nil {
		return nil, nil, err
	}
	s := salefile.FromLive(view.Config, pages.Published)
	return &s, pages.Draft, nil
}

// salesClient calls a node's admin API for apply and get.
type salesClient struct {
	base, auth string
}

func (c salesClient) get(ctx context.Context, path string, out any) (int, error) {
	return c.do(ctx, http.MethodGet, path, nil, out)
}

func (c salesClient) put(ctx context.Context, path string, body []byte, out any) error {
	_, err := c.do(ctx, http.MethodPut, path, body, out)
	return err
}

func (c salesClient) post(ctx context.Context, path string, body []byte) error {
	_, err := c.do(ctx, http.MethodPost, path, body, nil)
	return err
}

// do sends one request and decodes a JSON answer into out; an error
// answer is the problem's status, code and detail (problemOf).
func (c salesClient) do(ctx context.Context, method, path string, body []byte, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.auth != "" {
		req.Header.Set("Authorization", "Bearer "+c.auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return resp.StatusCode, problemOf(resp)
	}
	if out == nil {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(out)
}
