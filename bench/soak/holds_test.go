//go:build soak && linux

package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/wait"
)

// A staff hold is a span in which staff closed or paused a sale: from the
// moment a node answered 200 to the close (or pause) until the reopen (or
// resume) was sent. Nothing is admitted or sold inside it (issue 34, items
// 2 and 17): no status admission or granted claim (and, while closed, no
// join) whose request was sent after the hold began and answered before
// it ended. The node that
// answered the 200 holds it from that moment (its save reloads its view);
// the other nodes within holdSlack (a tick, with room for a loaded
// machine), or MaxViewAge and a second when a fault may have kept a node
// from reading the configuration meanwhile (a view acts at most MaxViewAge
// past its read, event.MaxViewAge).
type hold struct {
	what     string // "closed" or "paused"
	node     string // the node that answered the 200
	from, to time.Time
}

// holdSlack is how long after a staff save the other nodes may still act
// on the view they read before it.
const holdSlack = time.Second

// beginHold records that staff's close or pause of sale ev was answered
// 200 by node at from.
func (h *history) beginHold(ev, what, node string, from time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holds[ev] = append(h.holds[ev], hold{what: what, node: node, from: from})
}

// endHold records that the reopen or resume of sale ev is about to be
// sent: from now on the hold may end.
func (h *history) endHold(ev string, to time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	hs := h.holds[ev]
	if n := len(hs); n > 0 && hs[n-1].to.IsZero() {
		hs[n-1].to = to
	}
}

// heldOver returns the staff hold of o's sale that o lies within (sent
// after it began, answered before it ended), or nil; h.mu is held.
func (h *history) heldOver(o op) *hold {
	for i := range h.holds[o.Sale] {
		hd := &h.holds[o.Sale][i]
		slack := time.Duration(0)
		if o.Node != hd.node {
			slack = holdSlack
			if h.faultBetween(hd.from.Add(-event.MaxViewAge), o.At) {
				slack = event.MaxViewAge + time.Second
			}
		}
		if o.Start.After(hd.from.Add(slack)) && (hd.to.IsZero() || o.At.Before(hd.to)) {
			return hd
		}
	}
	return nil
}

// faultBetween reports whether a fault that can keep a node from reading
// Redis (or restart it) was noted in (a, b); h.mu is held.
func (h *history) faultBetween(a, b time.Time) bool {
	for i := len(h.ops) - 1; i >= 0; i-- {
		o := h.ops[i]
		if o.At.Before(a) {
			break
		}
		if o.Kind == "fault" && o.At.Before(b) && !strings.Contains(o.Note, "worker") && !strings.Contains(o.Note, "NATS") {
			return true
		}
	}
	return h.promotedBetween(a, b)
}

// checkHold checks o against the staff holds of its sale; h.mu is held.
func (h *history) checkHold(o op) {
	hd := h.heldOver(o)
	if hd == nil {
		return
	}
	switch {
	case hd.what == "closed" && (o.Kind == "join" && o.Status == http.StatusOK || o.Kind == "bjoin" && o.Status == http.StatusSeeOther):
		// A pause holds admission and claims; people may still queue.
		h.violate(o, "%s joined sale %s while staff had it %s (node %s answered the hold at %s)", o.User, o.Sale, hd.what, hd.node, hd.from.Format("15:04:05.000"))
	case o.Kind == "status" && o.State == "admitted":
		h.violate(o, "%s was admitted to sale %s while staff had it %s (node %s answered the hold at %s)", o.User, o.Sale, hd.what, hd.node, hd.from.Format("15:04:05.000"))
	case (o.Kind == "claim" || o.Kind == "replay") && o.Status == http.StatusCreated:
		h.violate(o, "claim %s granted in sale %s while staff had it %s (node %s answered the hold at %s)", o.ClaimID, o.Sale, hd.what, hd.node, hd.from.Format("15:04:05.000"))
	}
}

// staffAt sends an admin request to some node until one answers want, at
// most tries times, and returns that node and when its answer came. A
// refusal other than a 5xx is an error; running out of tries is too.
func (f *faults) staffAt(ctx context.Context, rnd *rand.Rand, tries int, method, path string, body []byte, want int) (string, time.Time, error) {
	for try := 0; try < tries; try++ {
		i := rnd.IntN(nodes)
		status, raw := f.s.dp.AdminCall(f.s.base(i), method, path, body)
		at := time.Now()
		f.h.note("staff", "%s %s %s → %d (node %d)", method, path, body, status, i)
		if status == want {
			return strconv.Itoa(i), at, nil
		}
		if status != 0 && status < 500 {
			return "", at, fmt.Errorf("%s %s: %d %s, want %d", method, path, status, raw, want)
		}
		if !wait.Sleep(ctx, 500*time.Millisecond) {
			break
		}
	}
	return "", time.Now(), fmt.Errorf("%s %s: no node answered %d in %d tries", method, path, want, tries)
}

// holdFault is staff closing (or pausing) the current sale for a few
// seconds and opening it again. The hold is recorded from the 200; the
// reopen is asked until a node takes it (a sale left closed would stall
// the run), and the hold ends when the request that took is sent.
func holdFault(what, on, off string) func(ctx context.Context, f *faults, rnd *rand.Rand) error {
	return func(ctx context.Context, f *faults, rnd *rand.Rand) error {
		ev := f.sales.current()
		if ev == "none" {
			return nil
		}
		var body []byte
		if what == "closed" {
			body, _ = json.Marshal(map[string]any{"message": "Back in a moment: the soak closed the room"})
		}
		base := "/admin/events/" + ev
		node, from, err := f.staffAt(ctx, rnd, 10, http.MethodPost, base+on, body, http.StatusOK)
		if err == nil {
			f.h.beginHold(ev, what, node, from)
		}
		// Not taken, the sale may still be held all the same (a timed-out
		// request that took): it is opened again either way.
		wait.Sleep(ctx, dur(rnd, time.Second, 5*time.Second))
		f.h.endHold(ev, time.Now())
		for range 6 {
			if _, _, err2 := f.staffAt(ctx, rnd, 20, http.MethodPost, base+off, nil, http.StatusOK); err2 == nil {
				return err
			}
		}
		return fmt.Errorf("%s: sale %s could not be opened again", what, ev)
	}
}
