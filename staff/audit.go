package staff

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/luascript"
)

// auditKey is the deployment's audit trail.
const auditKey = "ar:{staff}:audit"

// AuditMax is about how many entries the trail keeps (XADD MAXLEN ~).
const AuditMax = 1_000_000

// Entry is one recorded staff action. When is Redis TIME (the stream
// entry's id), so entries of every node are in one order.
type Entry struct {
	ID     string          `json:"id"`
	When   time.Time       `json:"when"`
	Who    string          `json:"who"`
	Role   string          `json:"role"`
	Action string          `json:"action"`
	Event  string          `json:"event,omitempty"`
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
}

// Audit is the append-only trail of staff actions, a Redis stream shared
// by every node. Callers redact secrets before recording: Before and
// After are stored as given.
//
// A *Audit is safe for concurrent use.
type Audit struct {
	rdb interface {
		redis.Cmdable
		redis.Scripter
	}
}

// NewAudit returns the audit trail kept in rdb.
func NewAudit(rdb redis.UniversalClient) *Audit { return &Audit{rdb: rdb} }

// Record appends e (its ID and When are set by Redis).
func (a *Audit) Record(ctx context.Context, e Entry) error {
	vals := []any{"who", e.Who, "role", e.Role, "action", e.Action, "event", e.Event, "before", string(e.Before), "after", string(e.After)}
	err := a.rdb.XAdd(ctx, &redis.XAddArgs{Stream: auditKey, MaxLen: AuditMax, Approx: true, Values: vals}).Err()
	if err != nil {
		return fmt.Errorf("staff audit: %w", err)
	}
	return nil
}

// Query selects entries: of one event (empty: all), at or after since
// (zero: from the start), newest first, at most limit.
type Query struct {
	Event string
	Since time.Time
	Limit int
}

// List returns the entries q selects, newest first.
func (a *Audit) List(ctx context.Context, q Query) ([]Entry, error) {
	start := "-"
	if !q.Since.IsZero() {
		start = strconv.FormatInt(q.Since.UnixMilli(), 10)
	}
	if q.Limit <= 0 {
		q.Limit = 1000
	}
	out := []Entry{}
	end := "+"
	for len(out) < q.Limit {
		msgs, err := a.rdb.XRevRangeN(ctx, auditKey, end, start, 500).Result()
		if err != nil {
			return nil, fmt.Errorf("staff audit: %w", err)
		}
		for _, m := range msgs {
			e := entryOf(m)
			if q.Event == "" || e.Event == q.Event {
				out = append(out, e)
				if len(out) == q.Limit {
					break
				}
			}
		}
		if len(msgs) < 500 {
			break
		}
		end = "(" + msgs[len(msgs)-1].ID
	}
	return out, nil
}

func entryOf(m redis.XMessage) Entry {
	s := func(k string) string { v, _ := m.Values[k].(string); return v }
	e := Entry{ID: m.ID, Who: s("who"), Role: s("role"), Action: s("action"), Event: s("event")}
	if ms, _, ok := strings.Cut(m.ID, "-"); ok {
		if n, err := strconv.ParseInt(ms, 10, 64); err == nil {
			e.When = time.UnixMilli(n).UTC()
		}
	}
	if b := s("before"); b != "" {
		e.Before = json.RawMessage(b)
	}
	if v := s("after"); v != "" {
		e.After = json.RawMessage(v)
	}
	return e
}

// recordOnce appends an entry unless its marker is set, and sets it:
// one entry for a fact that every node observes.
var recordOnce = luascript.New(auditOnceLua)

//go:embed audit_once.lua
var auditOnceLua string

// RecordOnce appends e unless an entry of the same marker was recorded in
// the last year: for facts every node observes, like a key rotation made
// in the shared key directory. It reports whether e was appended.
func (a *Audit) RecordOnce(ctx context.Context, marker string, e Entry) (bool, error) {
	args := []any{(366 * 24 * time.Hour).Milliseconds(), AuditMax, "who", e.Who, "role", e.Role, "action", e.Action, "event", e.Event, "before", string(e.Before), "after", string(e.After)}
	n, err := recordOnce.Run(ctx, a.rdb, []string{auditKey, "ar:{staff}:audit:once:" + marker}, args...).Int()
	if err != nil {
		return false, fmt.Errorf("staff audit: %w", err)
	}
	return n == 1, nil
}

var (
	//go:embed audit_capped.lua
	auditCappedLua string
	recordCapped   = luascript.New(auditCappedLua)
)

// RecordCapped appends e unless max entries of its class were recorded in
// the current window (which starts with the class's first entry): for
// entries an outsider can cause, like failed sign-ins, which must not
// flood the trail out. The first entry over the cap is replaced by one
// notice, action "<class>.suppressed", that says so. It reports whether
// e was appended.
func (a *Audit) RecordCapped(ctx context.Context, class string, max int, window time.Duration, e Entry) (bool, error) {
	notice, _ := json.Marshal(map[string]any{"max": max, "window_seconds": int(window.Seconds())})
	args := []any{window.Milliseconds(), max, AuditMax, class + ".suppressed", string(notice),
		"who", e.Who, "role", e.Role, "action", e.Action, "event", e.Event, "before", string(e.Before), "after", string(e.After)}
	n, err := recordCapped.Run(ctx, a.rdb, []string{auditKey, "ar:{staff}:audit:cap:" + class}, args...).Int()
	if err != nil {
		return false, fmt.Errorf("staff audit: %w", err)
	}
	return n == 1, nil
}
