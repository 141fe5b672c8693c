package staffapi

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// AuditLog is the deployment's trail of staff actions; *staff.Audit.
type AuditLog interface {
	Record(ctx context.Context, e staff.Entry) error
	List(ctx context.Context, q staff.Query) ([]staff.Entry, error)
	RecordCapped(ctx context.Context, class string, max int, window time.Duration, e staff.Entry) (bool, error)
}

// Failed sign-ins (and failed old passwords) are audited, at most
// failureAuditMax a window across the deployment: an outsider causes
// them, and the per-address throttle alone does not stop many addresses
// from flooding the trail. The first one over is a notice,
// "auth_failure.suppressed".
const (
	failureAuditClass  = "auth_failure"
	failureAuditMax    = 60
	failureAuditWindow = time.Minute
)

// recordFailure audits a failed authentication from addr; never what was
// tried.
func (s *API) recordFailure(c *fiber.Ctx, e staff.Entry, addr string) {
	if s.deps.Audit == nil {
		return
	}
	e.After, _ = json.Marshal(fiber.Map{"addr": addr})
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	if _, err := s.deps.Audit.RecordCapped(ctx, failureAuditClass, failureAuditMax, failureAuditWindow, e); err != nil {
		s.cfg.Log.Error("audit record lost", "request_id", kit.RequestID(c), "action", e.Action, "err", err)
	}
}

// record appends a staff action to the audit trail, naming the caller.
// before and after are marshalled to JSON as given: callers pass only
// redacted values (never passwords, API keys or webhook secrets). The
// action has already happened, so a failure to record is logged, not
// answered.
func (s *API) record(c *fiber.Ctx, action, ev string, before, after any) {
	if s.deps.Audit == nil {
		return
	}
	id, _ := kit.StaffOf(c)
	e := staff.Entry{Who: id.Name, Role: string(id.Role), Action: action, Event: ev}
	if id.Token && id.Role == "" {
		e.Role = "bootstrap"
	}
	if before != nil {
		e.Before, _ = json.Marshal(before)
	}
	if after != nil {
		e.After, _ = json.Marshal(after)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	if err := s.deps.Audit.Record(ctx, e); err != nil {
		s.cfg.Log.Error("audit record lost", "request_id", kit.RequestID(c), "action", action, "event", ev, "err", err)
	}
}

// configDiff returns the fields of two configurations that differ, as
// before and after maps; the seed, webhook and captcha secrets are never
// included.
func configDiff(old, next *event.Config) (before, after map[string]json.RawMessage) {
	flat := func(cfg *event.Config) map[string]json.RawMessage {
		m := map[string]json.RawMessage{}
		if cfg == nil {
			return m
		}
		c := *cfg
		c.Seed, c.Webhooks = "", event.RedactWebhooks(cfg.Webhooks)
		c.Limits.Captcha = cfg.Limits.Captcha.Redacted()
		c.Shop = event.RedactShop(cfg.Shop)
		b, _ := json.Marshal(c)
		_ = json.Unmarshal(b, &m)
		return m
	}
	a, b := flat(old), flat(next)
	before, after = map[string]json.RawMessage{}, map[string]json.RawMessage{}
	for k, v := range b {
		if w, ok := a[k]; !ok || string(w) != string(v) {
			if ok {
				before[k] = w
			}
			after[k] = v
		}
	}
	for k, w := range a {
		if _, ok := b[k]; !ok {
			before[k] = w
		}
	}
	return before, after
}

// auditQuery reads ?event= and ?since= (RFC 3339).
func auditQuery(c *fiber.Ctx) (staff.Query, error) {
	q := staff.Query{Event: c.Query("event"), Limit: 1000}
	if q.Event != "" && !event.ValidID(q.Event) {
		return q, kit.BadRequest("event must be an event id")
	}
	if v := c.Query("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return q, kit.BadRequest("since must be an RFC 3339 time, like 2026-01-02T15:04:05Z")
		}
		q.Since = t
	}
	return q, nil
}

func (s *API) auditEntries(c *fiber.Ctx) ([]staff.Entry, error) {
	if s.deps.Audit == nil {
		return []staff.Entry{}, nil
	}
	q, err := auditQuery(c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	out, err := s.deps.Audit.List(ctx, q)
	if err != nil {
		return nil, s.staffDegraded(c, err)
	}
	return out, nil
}

// listAudit answers GET /admin/audit: the trail, newest first.
func (s *API) listAudit(c *fiber.Ctx) error {
	out, err := s.auditEntries(c)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"entries": out})
}

// exportAudit answers GET /admin/audit.csv, the same rows as CSV.
func (s *API) exportAudit(c *fiber.Ctx) error {
	out, err := s.auditEntries(c)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="anteroom-audit.csv"`)
	w := csv.NewWriter(c.Response().BodyWriter())
	_ = w.Write([]string{"when", "who", "role", "action", "event", "before", "after"})
	for _, e := range out {
		_ = w.Write([]string{e.When.Format(time.RFC3339Nano), e.Who, e.Role, e.Action, e.Event, csvSafe(string(e.Before)), csvSafe(string(e.After))})
	}
	w.Flush()
	return w.Error()
}

// csvSafe keeps a spreadsheet from reading a cell as a formula.
func csvSafe(v string) string {
	if v != "" && (v[0] == '=' || v[0] == '+' || v[0] == '-' || v[0] == '@') {
		return "'" + v
	}
	return v
}
