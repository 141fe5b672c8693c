package staffapi

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// ListStore keeps the door's block and eligibility lists; *lists.Store.
type ListStore interface {
	Create(ctx context.Context, name string, kind lists.Kind) (lists.Meta, error)
	Get(ctx context.Context, name string) (lists.Meta, error)
	List(ctx context.Context) ([]lists.Meta, error)
	Delete(ctx context.Context, name string) error
	Load(ctx context.Context, name string, r io.Reader, o lists.LoadOptions) (lists.LoadResult, error)
	Add(ctx context.Context, name, value string) (lists.Meta, error)
	Remove(ctx context.Context, name, value string) (lists.Meta, error)
	Export(ctx context.Context, name string, w io.Writer) error
}

// mountLists adds the list routes: shared lists and a sale's own
// ("<event id>.<name>") alike.
func (s *API) mountLists(app fiber.Router) {
	app.Get("/admin/lists", s.allow(staff.Viewer, false), s.listLists)
	app.Put("/admin/lists/:name", s.allow(staff.Admin, false), s.createList)
	app.Get("/admin/lists/:name", s.allow(staff.Viewer, false), s.getList)
	app.Delete("/admin/lists/:name", s.allow(staff.Admin, false), s.deleteList)
	app.Post("/admin/lists/:name/entries", s.allow(staff.Operator, false), s.loadList)
	app.Get("/admin/lists/:name/entries", s.allow(staff.Viewer, false), s.exportList)
	app.Put("/admin/lists/:name/entries/:value", s.allow(staff.Operator, false), s.addEntry)
	app.Delete("/admin/lists/:name/entries/:value", s.allow(staff.Operator, false), s.removeEntry)
}

// loadJSON is the answer to a bulk upload.
type loadJSON struct {
	Read       int64      `json:"read"`
	Added      int64      `json:"added"`
	Duplicates int64      `json:"duplicates"`
	DryRun     bool       `json:"dry_run"`
	List       lists.Meta `json:"list"`
}

// newListJSON is the body of PUT /admin/lists/{name}.
type newListJSON struct {
	Kind lists.Kind `json:"kind"`
}

// errNoLists answers the list routes of a node without a list store.
var errNoLists = kit.RetryLater("degraded", "lists are not kept on this node", 1)

// listName returns the path's list name, checked, and the event whose
// own list it is ("" for a shared list), for the audit trail.
func (s *API) listName(c *fiber.Ctx) (name, ev string, err error) {
	if s.deps.Lists == nil {
		return "", "", errNoLists
	}
	name = strings.Clone(c.Params("name"))
	if !event.ValidListName(name) {
		return "", "", kit.BadRequest("a list name is 1 to 64 characters of a-z 0-9 _ - (not starting with _ or -), or a sale's own: <event id>.<name>")
	}
	ev, _, _ = strings.Cut(name, ".")
	if ev == name {
		ev = ""
	}
	return name, ev, nil
}

func (s *API) listLists(c *fiber.Ctx) error {
	if s.deps.Lists == nil {
		return errNoLists
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	all, err := s.deps.Lists.List(ctx)
	if err != nil {
		return err
	}
	if all == nil {
		all = []lists.Meta{}
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"lists": all})
}

func (s *API) createList(c *fiber.Ctx) error {
	name, ev, err := s.listName(c)
	if err != nil {
		return err
	}
	var in newListJSON
	if err := kit.DecodeStrict(c, "list", &in); err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	m, err := s.deps.Lists.Create(ctx, name, in.Kind)
	if err != nil && !unreplicated(err) {
		return err
	}
	s.record(c, "list.create", ev, nil, fiber.Map{"list": name, "kind": m.Kind})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(m)
}

func (s *API) getList(c *fiber.Ctx) error {
	name, _, err := s.listName(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	m, err := s.deps.Lists.Get(ctx, name)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(m)
}

func (s *API) deleteList(c *fiber.Ctx) error {
	name, ev, err := s.listName(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	m, err := s.deps.Lists.Get(ctx, name)
	if err != nil {
		return err
	}
	err = s.deps.Lists.Delete(ctx, name)
	if err != nil && !unreplicated(err) {
		return err
	}
	s.record(c, "list.delete", ev, fiber.Map{"list": name, "kind": m.Kind, "count": m.Count, "version": m.Version}, nil)
	if err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// loadList answers POST /admin/lists/{name}/entries: a bulk upload,
// streamed (StreamsBody), in replace mode (the default: the list becomes
// the upload, atomically) or append mode; with dry_run=true it only
// counts. A malformed line is 400 naming it, nothing applied; over
// Config.ListUploadMax bytes (refused before reading when Content-Length
// says so) or Config.ListMaxEntries entries is 413.
func (s *API) loadList(c *fiber.Ctx) error {
	name, ev, err := s.listName(c)
	if err != nil {
		return err
	}
	o := lists.LoadOptions{Max: s.cfg.ListMaxEntries}
	switch c.Query("mode", "replace") {
	case "replace":
		o.Replace = true
	case "append":
	default:
		return kit.BadRequest("mode must be replace or append")
	}
	switch f := lists.Format(c.Query("format", string(lists.CSV))); f {
	case lists.CSV, lists.NDJSON:
		o.Format = f
	default:
		return kit.BadRequest("format must be csv or ndjson")
	}
	switch c.Query("dry_run", "false") {
	case "true":
		o.DryRun = true
	case "false":
	default:
		return kit.BadRequest("dry_run must be true or false")
	}
	if ce := c.Get(fiber.HeaderContentEncoding); ce != "" && !strings.EqualFold(ce, "identity") {
		return kit.BadRequest("send the list uncompressed: Content-Encoding is not supported here")
	}
	tooLarge := kit.NewProblem(fiber.StatusRequestEntityTooLarge, "too_large",
		"a list upload is limited to "+byteSize(s.cfg.ListUploadMax)+" (ANTEROOM_LIST_UPLOAD_MAX_BYTES)")
	req := c.Request()
	if int64(req.Header.ContentLength()) > s.cfg.ListUploadMax {
		return tooLarge // not read: the edge closes the connection
	}
	body := &uploadBody{left: s.cfg.ListUploadMax}
	if req.IsBodyStream() {
		body.r, body.conn = req.BodyStream(), c.Context().Conn()
	} else { // a spelling of the path the edge held to 16 KB
		body.r = strings.NewReader(string(c.Body()))
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), s.cfg.ListTimeout)
	defer cancel()
	res, err := s.deps.Lists.Load(ctx, name, body, o)
	if errors.Is(err, errUploadTooLarge) {
		return tooLarge
	}
	if err != nil && !unreplicated(err) {
		return err
	}
	if !o.DryRun {
		mode := "append"
		if o.Replace {
			mode = "replace"
		}
		s.record(c, "list.load", ev, nil, fiber.Map{"list": name, "mode": mode, "format": o.Format,
			"read": res.Read, "added": res.Added, "duplicates": res.Duplicates, "count": res.Meta.Count, "version": res.Meta.Version})
	}
	if err != nil {
		return err
	}
	return c.JSON(loadJSON{Read: res.Read, Added: res.Added, Duplicates: res.Duplicates, DryRun: o.DryRun, List: res.Meta})
}

// exportList answers GET /admin/lists/{name}/entries: the entries as
// text, one a line, streamed (exportBody). X-List-Count and
// X-List-Version say what the export starts from.
func (s *API) exportList(c *fiber.Ctx) error {
	name, _, err := s.listName(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	m, err := s.deps.Lists.Get(ctx, name)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+name+`.txt"`)
	c.Set("X-List-Count", itoa(m.Count))
	c.Set("X-List-Version", itoa(m.Version))
	if c.Method() == fiber.MethodHead {
		return nil // the headers only: no export runs
	}
	store, log, rid := s.deps.Lists, s.cfg.Log, kit.RequestID(c)
	c.Context().SetBodyStream(newExportBody(c.Context().Conn(), s.cfg.ListTimeout, func(ctx context.Context, w io.Writer) error {
		err := store.Export(ctx, name, w)
		if err != nil && !errors.Is(err, io.ErrClosedPipe) {
			log.Warn("list export cut short", "request_id", rid, "list", name, "err", err)
		}
		return err
	}), -1)
	return nil
}

// entryValue returns the path's entry value, unescaped (a network's
// "10.0.0.0/8" comes as 10.0.0.0%2F8).
func entryValue(c *fiber.Ctx) (string, error) {
	v, err := url.PathUnescape(c.Params("value"))
	if err != nil || v == "" || !utf8.ValidString(v) {
		return "", kit.BadRequest("the entry in the path must be a percent-encoded value")
	}
	return v, nil
}

func (s *API) addEntry(c *fiber.Ctx) error    { return s.changeEntry(c, "list.add") }
func (s *API) removeEntry(c *fiber.Ctx) error { return s.changeEntry(c, "list.remove") }

// changeEntry adds (list.add) or removes (list.remove) the path's entry
// and answers the list's metadata; the audit records the count, never the
// value.
func (s *API) changeEntry(c *fiber.Ctx, action string) error {
	name, ev, err := s.listName(c)
	if err != nil {
		return err
	}
	value, err := entryValue(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	change := s.deps.Lists.Add
	if action == "list.remove" {
		change = s.deps.Lists.Remove
	}
	m, err := change(ctx, name, value)
	if err != nil && !unreplicated(err) {
		return err
	}
	s.record(c, action, ev, nil, fiber.Map{"list": name, "count": m.Count, "version": m.Version})
	if err != nil {
		return err
	}
	return c.JSON(m)
}

// unreplicated reports whether err says a list change was saved on the
// Redis primary and not copied by its replicas in time: the change
// stands, so it is audited, and answered 503 not_replicated (send it
// again).
func unreplicated(err error) bool { return errors.Is(err, event.ErrNotReplicated) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// byteSize writes n bytes for a person: "512 MiB", "1000 bytes".
func byteSize(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return itoa(n/u.size) + " " + u.name
		}
	}
	return itoa(n) + " bytes"
}
