package kit_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/attest/appattest"
	"github.com/anteroom/anteroom/attest/device"
	"github.com/anteroom/anteroom/attest/playintegrity"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/door/rules"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/netguard"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/salefile"
	"github.com/anteroom/anteroom/lifecycle"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/push"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/report"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/turnstile"
	"github.com/anteroom/anteroom/web/kit"
)

// sentinels is every exported sentinel error of the module and the problem
// a client sees when a handler returns it, wrapped as handlers wrap it.
// TestEverySentinelMapped fails when a package gains one that is not here.
var sentinels = []struct {
	name   string // package path in the module, dot, name
	err    error
	status int
	code   string
}{
	{"door/rules.ErrInvalidRule", rules.ErrInvalidRule, http.StatusBadRequest, "invalid_rule"},
	{"claim.ErrSoldOut", claim.ErrSoldOut, http.StatusGone, "sold_out"},
	{"claim.ErrLimitReached", claim.ErrLimitReached, http.StatusConflict, "limit_reached"},
	{"claim.ErrSignalLimit", claim.ErrSignalLimit, http.StatusConflict, "signal_limit"},
	{"claim.ErrNotFound", claim.ErrNotFound, http.StatusNotFound, "not_found"},
	{"claim.ErrUnavailable", claim.ErrUnavailable, http.StatusServiceUnavailable, "degraded"},
	{"claim.ErrNeedsRebuild", claim.ErrNeedsRebuild, http.StatusServiceUnavailable, "paused"},
	{"claim.ErrPaused", claim.ErrPaused, http.StatusServiceUnavailable, "paused"},
	{"claim.ErrSuperseded", claim.ErrSuperseded, http.StatusServiceUnavailable, "paused"},
	{"claim.ErrConfirmed", claim.ErrConfirmed, http.StatusConflict, "conflict"},
	{"claim.ErrCancelled", claim.ErrCancelled, http.StatusConflict, "conflict"},
	{"claim.ErrNotCancellable", claim.ErrNotCancellable, http.StatusConflict, "not_cancellable"},
	{"claim.ErrBadCancellation", claim.ErrBadCancellation, http.StatusBadRequest, "bad_request"},
	{"claim.ErrRebuildRunning", claim.ErrRebuildRunning, http.StatusConflict, "conflict"},
	{"claim.ErrHeld", claim.ErrHeld, http.StatusConflict, "conflict"},
	{"claim.ErrLockReached", claim.ErrLockReached, http.StatusConflict, "locked"},
	{"claim.ErrHoldLost", claim.ErrHoldLost, http.StatusServiceUnavailable, "stock_not_laid"},
	{"event.ErrNotFound", event.ErrNotFound, http.StatusNotFound, "unknown_event"},
	{"event.ErrConflict", event.ErrConflict, http.StatusConflict, "conflict"},
	{"event.ErrLocked", event.ErrLocked, http.StatusConflict, "locked"},
	{"event.ErrNotReplicated", event.ErrNotReplicated, http.StatusServiceUnavailable, "not_replicated"},
	{"attest/playintegrity.ErrMalformed", playintegrity.ErrMalformed, http.StatusBadRequest, "bad_request"},
	{"attest/playintegrity.ErrAttestation", playintegrity.ErrAttestation, http.StatusForbidden, "attestation_failed"},
	{"attest/playintegrity.ErrStale", playintegrity.ErrStale, http.StatusForbidden, "attestation_failed"},
	{"attest/appattest.ErrMalformed", appattest.ErrMalformed, http.StatusBadRequest, "bad_request"},
	{"attest/appattest.ErrAttestation", appattest.ErrAttestation, http.StatusForbidden, "attestation_failed"},
	{"attest/appattest.ErrReplay", appattest.ErrReplay, http.StatusForbidden, "attestation_failed"},
	{"attest/device.ErrRequired", device.ErrRequired, http.StatusForbidden, "attestation_failed"},
	{"attest/device.ErrChallenge", device.ErrChallenge, http.StatusForbidden, "attestation_failed"},
	{"attest/device.ErrMalformed", device.ErrMalformed, http.StatusBadRequest, "bad_request"},
	{"event.ErrClosed", event.ErrClosed, http.StatusServiceUnavailable, "closed"},
	{"event.ErrInvalid", event.ErrInvalid, http.StatusBadRequest, "bad_request"},
	{"event.ErrFailOpen", event.ErrFailOpen, http.StatusBadRequest, "bad_request"},
	{"push.ErrInvalid", push.ErrInvalid, http.StatusBadRequest, "bad_request"},
	{"push.ErrTooLarge", push.ErrTooLarge, http.StatusBadRequest, "bad_request"},
	{"push.ErrWrongEvent", push.ErrWrongEvent, http.StatusBadRequest, "bad_request"},
	{"push.ErrDisabled", push.ErrDisabled, http.StatusNotFound, "not_found"},
	{"queue.ErrNotOpen", queue.ErrNotOpen, http.StatusForbidden, "not_open"},
	{"queue.ErrClosed", queue.ErrClosed, http.StatusForbidden, "forbidden"},
	{"queue.ErrStaleView", queue.ErrStaleView, http.StatusServiceUnavailable, "degraded"},
	{"queue.ErrBlocked", queue.ErrBlocked, http.StatusForbidden, "blocked"},
	{"queue.ErrNotEligible", queue.ErrNotEligible, http.StatusForbidden, "not_eligible"},
	{"door.ErrBlocked", door.ErrBlocked, http.StatusForbidden, "blocked"},
	{"door.ErrNotEligible", door.ErrNotEligible, http.StatusForbidden, "not_eligible"},
	{"tokens.ErrInvalid", tokens.ErrInvalid, http.StatusUnauthorized, "unauthenticated"},
	{"tokens.ErrWrongEvent", tokens.ErrWrongEvent, http.StatusForbidden, "forbidden"},
	{"limit.ErrTaken", limit.ErrTaken, http.StatusConflict, "limit_reached"},
	{"staff.ErrNotFound", staff.ErrNotFound, http.StatusNotFound, "not_found"},
	{"staff.ErrExists", staff.ErrExists, http.StatusConflict, "conflict"},
	{"staff.ErrBadLogin", staff.ErrBadLogin, http.StatusUnauthorized, "unauthenticated"},
	{"staff.ErrLastAdmin", staff.ErrLastAdmin, http.StatusConflict, "conflict"},
	{"staff.ErrStale", staff.ErrStale, http.StatusUnauthorized, "unauthenticated"},
	{"staff.ErrLinkSpent", staff.ErrLinkSpent, http.StatusUnauthorized, "unauthenticated"},
	{"report.ErrNotInView", report.ErrNotInView, http.StatusServiceUnavailable, "degraded"},
	{"tokens.ErrPassInvalid", tokens.ErrPassInvalid, http.StatusForbidden, "pass_invalid"},
	{"tokens.ErrInviteInvalid", tokens.ErrInviteInvalid, http.StatusForbidden, "invite_invalid"},
	{"admission.ErrUnknownSession", admission.ErrUnknownSession, http.StatusNotFound, "unknown_session"},
	{"admission.ErrPassUnknown", admission.ErrPassUnknown, http.StatusNotFound, "not_found"},
	{"admission.ErrPassExists", admission.ErrPassExists, http.StatusConflict, "conflict"},
	{"admission.ErrPassRevoked", admission.ErrPassRevoked, http.StatusForbidden, "pass_revoked"},
	{"admission.ErrPassUsedUp", admission.ErrPassUsedUp, http.StatusForbidden, "pass_used_up"},
	{"turnstile.ErrNotForSale", turnstile.ErrNotForSale, http.StatusForbidden, "forbidden"},
	{"turnstile.ErrNoToken", turnstile.ErrNoToken, http.StatusUnauthorized, "unauthenticated"},
	{"turnstile.ErrOtherUser", turnstile.ErrOtherUser, http.StatusForbidden, "forbidden"},
	{"turnstile.ErrPaused", turnstile.ErrPaused, http.StatusServiceUnavailable, "paused"},
	{"door/lists.ErrNoList", lists.ErrNoList, http.StatusNotFound, "no_list"},
	{"door/lists.ErrExists", lists.ErrExists, http.StatusConflict, "exists"},
	{"door/lists.ErrInUse", lists.ErrInUse, http.StatusConflict, "in_use"},
	{"door/lists.ErrTooLarge", lists.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
	{"door/lists.ErrUnknownList", lists.ErrUnknownList, http.StatusBadRequest, "bad_request"},
	{"door/lists.ErrInvalid", lists.ErrInvalid, http.StatusBadRequest, "bad_request"},
	{"turnstile.ErrUncounted", turnstile.ErrUncounted, http.StatusServiceUnavailable, "degraded"},
	// Errors that never reach a handler: a weak secret stops the node at
	// start, a bad webhook signature is the shop's verifier's answer, a
	// draining node answers /readyz with its own problem, a full safety-net
	// room sends the gate's visitor to the waiting page. Should one ever
	// reach a client, it is an internal error, logged.
	{"admission.ErrFull", admission.ErrFull, http.StatusInternalServerError, "internal"},
	{"tokens.ErrWeakSecret", tokens.ErrWeakSecret, http.StatusInternalServerError, "internal"},
	{"lifecycle.ErrBadSignature", lifecycle.ErrBadSignature, http.StatusInternalServerError, "internal"},
	{"internal/node.ErrDraining", node.ErrDraining, http.StatusInternalServerError, "internal"},
	// A refused dial target is a background probe's, webhook's or push's
	// (viewers see its class); the key stages are `anteroom keys`'s.
	{"internal/netguard.ErrRefused", netguard.ErrRefused, http.StatusInternalServerError, "internal"},
	{"tokens.ErrNextPending", tokens.ErrNextPending, http.StatusInternalServerError, "internal"},
	{"tokens.ErrNoNext", tokens.ErrNoNext, http.StatusInternalServerError, "internal"},
	{"tokens.ErrTooSoon", tokens.ErrTooSoon, http.StatusInternalServerError, "internal"},
	// A sales file's problem is `anteroom apply`'s, read on the staff's
	// machine before any request.
	{"internal/salefile.ErrFormat", salefile.ErrFormat, http.StatusInternalServerError, "internal"},
	// Problems of their own, answered as they are.
	{"web/kit.ErrUnknownEvent", kit.ErrUnknownEvent, http.StatusNotFound, "unknown_event"},
	{"web/kit.ErrNoToken", kit.ErrNoToken, http.StatusUnauthorized, "unauthenticated"},
}

// TestErrorMap checks what each sentinel error becomes over HTTP, wrapped
// with context as handlers return it; internal text never reaches Detail.
func TestErrorMap(t *testing.T) {
	for _, c := range sentinels {
		t.Run(c.name, func(t *testing.T) {
			err := fmt.Errorf("handler context: %w", c.err)
			p, known := kit.ToProblem(err)
			if p.Status != c.status || p.Code != c.code {
				t.Errorf("%s -> %d %s, want %d %s", c.name, p.Status, p.Code, c.status, c.code)
			}
			if known != (c.status != http.StatusInternalServerError) {
				t.Errorf("%s: known = %v", c.name, known)
			}
			// An invalid or locked configuration's detail is the event
			// package's message, written for staff, and an invalid push
			// subscription's the push package's, written for its page,
			// and a refused fail-open's the event package's, for staff;
			// every other detail is the map's own text.
			staffText := c.err == event.ErrInvalid || c.err == event.ErrLocked || c.err == claim.ErrLockReached || c.err == event.ErrFailOpen ||
				c.err == push.ErrInvalid || c.err == push.ErrTooLarge || c.err == rules.ErrInvalidRule ||
				c.err == lists.ErrInUse || c.err == lists.ErrTooLarge || c.err == lists.ErrUnknownList || c.err == lists.ErrInvalid
			if !staffText && (strings.Contains(p.Detail, "handler context") || strings.Contains(p.Detail, c.err.Error())) {
				t.Errorf("%s: detail %q carries internal error text", c.name, p.Detail)
			}
			if (p.Status == http.StatusServiceUnavailable) != (p.RetryAfter > 0) {
				t.Errorf("%s: status %d with Retry-After %d s", c.name, p.Status, p.RetryAfter)
			}
		})
	}
	var line error = &lists.LineError{Line: 7, Err: fmt.Errorf("%w: empty value", lists.ErrInvalid)}
	if p, _ := kit.ToProblem(fmt.Errorf("load: %w", line)); p.Status != http.StatusBadRequest || p.Line != 7 || !strings.Contains(p.Detail, "line 7") {
		t.Errorf("LineError on line 7 -> %d line %d %q, want 400 naming line 7", p.Status, p.Line, p.Detail)
	}
	var bad error = &rules.RuleError{Rule: "bots", Line: 2, Column: 14, Msg: "syntax error"}
	if p, _ := kit.ToProblem(fmt.Errorf("save: %w", bad)); p.Code != "invalid_rule" || p.Rule != "bots" || p.Line != 2 || p.Column != 14 || !strings.Contains(p.Detail, "column 14") {
		t.Errorf("RuleError of bots at 2:14 -> %s rule %q line %d column %d %q, want invalid_rule naming them", p.Code, p.Rule, p.Line, p.Column, p.Detail)
	}
	if p, _ := kit.ToProblem(fmt.Errorf("claim: %w", &claim.SignalLimitError{Dim: "payment"})); p.Code != "signal_limit" || p.Status != 409 || p.Signal != "payment" || !strings.Contains(p.Detail, "per payment") {
		t.Errorf("SignalLimitError -> %+v, want 409 signal_limit naming payment", p)
	}
	var held error = &claim.LimitError{Held: []string{"c1"}}
	if p, _ := kit.ToProblem(held); p.Code != "limit_reached" || len(p.ClaimIDs) != 1 {
		t.Errorf("LimitError -> %+v, want limit_reached with the held claim ids", p)
	}
	var closed error = &event.ClosedError{RetryAfter: 90 * time.Minute}
	if p, _ := kit.ToProblem(fmt.Errorf("join: %w", closed)); p.Status != http.StatusServiceUnavailable || p.Code != "closed" || p.RetryAfter != 5400 {
		t.Errorf("ClosedError until +90 min -> %d %s Retry-After %d, want 503 closed 5400", p.Status, p.Code, p.RetryAfter)
	}
	var notEligible error = &door.NotEligibleError{Message: "only for members of the club"}
	if p, _ := kit.ToProblem(fmt.Errorf("join: %w", notEligible)); p.Status != http.StatusForbidden || p.Code != "not_eligible" || p.Detail != "only for members of the club" {
		t.Errorf("NotEligibleError -> %d %s %q, want 403 not_eligible with the sale's message", p.Status, p.Code, p.Detail)
	}
	if p, _ := kit.ToProblem(door.ErrBlocked); p.Detail != "you may not enter this sale" {
		t.Errorf("blocked: detail %q says more than the code", p.Detail)
	}
	if p, known := kit.ToProblem(errors.New("a bug")); p.Status != http.StatusInternalServerError || known {
		t.Errorf("an unknown error -> %d (known %v), want 500, logged", p.Status, known)
	}
}

// TestEverySentinelHasARow requires a row of the error table for every
// sentinel error of the module (TestEverySentinelMapped keeps sentinels
// complete from the sources), wrapped as handlers wrap it: none may reach
// the catch-all 500 by omission. Only packages that import web cannot be
// named by its table (internal/node); theirs must answer 500. A *Problem
// is its own row.
func TestEverySentinelHasARow(t *testing.T) {
	for _, c := range sentinels {
		var p *kit.Problem
		if errors.As(c.err, &p) {
			continue
		}
		err := fmt.Errorf("handler context: %w", c.err)
		above := strings.HasPrefix(c.name, "internal/node.")
		if kit.HasRow(err) == above {
			t.Errorf("%s: row found = %v, want %v", c.name, !above, above)
		}
		if above && c.status != http.StatusInternalServerError {
			t.Errorf("%s is mapped to %d without a row", c.name, c.status)
		}
	}
}

// TestEverySentinelMapped finds every exported package-level Err* variable
// in the module's non-test sources and requires a row in sentinels.
func TestEverySentinelMapped(t *testing.T) {
	root := "../.."
	listed := map[string]bool{}
	for _, c := range sentinels {
		listed[c.name] = true
	}
	found := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if strings.HasPrefix(n.Name, "Err") && n.IsExported() {
						found++
						if name := filepath.ToSlash(dir) + "." + n.Name; !listed[name] {
							t.Errorf("%s (%s) has no row in sentinels: say what a client sees when it is returned", name, path)
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < len(sentinels) {
		t.Errorf("found %d sentinel errors in the sources, fewer than the %d rows: remove the rows of errors that are gone", found, len(sentinels))
	}
}
