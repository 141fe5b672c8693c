package pages

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/shopper"
)

// previewStates are the visitor states the console previews, in the order
// a visitor meets them.
// room_closed is a room staff closed (event.Closure), with a visitor in
// the queue.
var previewStates = []string{"prequeue", "waiting", "admitted", "sold_out", "not_selected", "paused", "closed", "room_closed"}

// previewSeed is the sample seed a preview reveals (with its matching
// commitment): never an event's.
const previewSeed = "70726576696577207365656420e28093206e6f7420616e206576656e74277321"

// Sample figures of a preview.
const (
	previewSeq      = 4821 // a later joiner: position = seq
	previewPosition = 4821
	previewAhead    = 3607
	previewMaxAhead = 4800
	previewETA      = 722
	previewWindow   = 1000
)

// previewJSON is the runtime's sample instead of the API's answers.
type previewJSON struct {
	Event    shopper.PublicEvent `json:"event"`
	Me       map[string]any      `json:"me"`
	Status   map[string]any      `json:"status"`
	Res      map[string]any      `json:"res,omitempty"`
	Notice   map[string]any      `json:"notice,omitempty"`
	MaxAhead int64               `json:"max_ahead"`
}

// previewConfig is cfg with its times moved around now so that the sale
// is where state happens: a visitor in the shuffle window (or registered
// for the draw), in the queue, and so on.
func previewConfig(cfg *event.Config, state string, now time.Time) event.Config {
	c := *cfg
	c.Paused = state == "paused"
	if state == "not_selected" {
		c.Mode = event.Lottery // only a draw says "not selected"
	}
	if c.Mode == "" {
		c.Mode = event.FCFS
	}
	c.RandomWindowSeconds = 120
	switch state {
	case "prequeue":
		c.PrequeueOpensAt, c.StartsAt = now.Add(-5*time.Minute), now.Add(-30*time.Second)
		if c.Mode == event.Lottery {
			c.StartsAt = now.Add(2 * time.Minute)
		}
		c.EndsAt = now.Add(2 * time.Hour)
	case "closed":
		c.PrequeueOpensAt, c.StartsAt, c.EndsAt = now.Add(-3*time.Hour), now.Add(-2*time.Hour), now.Add(-time.Minute)
	default:
		c.PrequeueOpensAt, c.StartsAt, c.EndsAt = now.Add(-15*time.Minute), now.Add(-10*time.Minute), now.Add(2*time.Hour)
	}
	if c.Name == "" {
		c.Name = c.ID
	}
	if c.Supply == 0 {
		c.Supply, c.PerUserLimit = 500, 1
	}
	return c
}

// preview is the template data of cfg in state, with page's branding and
// copy and sample figures, and the runtime told to show them.
func (r *pageRenderer) preview(cfg *event.Config, page *event.Page, lang language, state string, now time.Time) PageData {
	c := previewConfig(cfg, state, now)
	soldOut := state == "sold_out"
	d := r.data(&c, page, lang, now, soldOut)
	d.Preview, d.State = true, state
	if state == "room_closed" {
		d.State = "closed"
	}
	revealed := state != "prequeue"
	if revealed {
		sum := sha256.Sum256(mustHex(previewSeed))
		d.Fairness = PageFairness{Commitment: hex.EncodeToString(sum[:]), Seed: previewSeed, WindowSize: previewWindow}
	}
	pub := shopper.PublicEvent{
		ID: c.ID, Name: c.Name, State: c.PhaseAt(now, soldOut), ServerTime: now.UTC(),
		PrequeueOpensAt: c.PrequeueOpensAt, StartsAt: c.StartsAt, EndsAt: c.EndsAt, WindowClosesAt: c.WindowEnd(),
		Mode: c.Mode, Supply: c.OnSale(), PerUserLimit: c.PerUserLimit, Remaining: shopper.Coarse(c.OnSale() / 3),
		Paused: c.Paused, SeedCommitment: d.Fairness.Commitment, Seed: d.Fairness.Seed,
		Joined: 25000, Admitted: previewPosition - previewAhead - 1,
	}
	if soldOut || state == "closed" {
		pub.Remaining = 0
	}
	stState := state
	if state == "room_closed" {
		pub.Closed = c.Closed
		if pub.Closed == nil {
			pub.Closed = &event.Closure{} // the default text
		}
		stState = "closed" // what status answers in a closed room
	}
	if revealed {
		w := int64(previewWindow)
		pub.WindowSize = &w
	}
	st := map[string]any{"state": stState, "position": nil, "ahead": nil, "eta_seconds": nil, "poll_after_ms": 5000}
	if state == "room_closed" {
		st["closed_by"] = "staff"
	}
	pv := &previewJSON{Event: pub, Me: map[string]any{"seq": previewSeq}, Status: st, MaxAhead: previewMaxAhead}
	switch state {
	case "waiting", "paused", "room_closed":
		d.Position, d.Ahead, d.ETASeconds = previewPosition, previewAhead, previewETA
		d.ETA = etaText(d.T, previewETA)
		st["position"], st["ahead"], st["eta_seconds"] = d.Position, d.Ahead, d.ETASeconds
		if state == "paused" {
			pv.Notice = map[string]any{"k": "paused"}
		}
	case "admitted":
		d.Position = previewPosition
		st["position"], st["ahead"], st["eta_seconds"] = d.Position, 0, 0
		st["admission_token"], st["admission_expires_at"] = "preview", now.Add(5*time.Minute).UTC()
	case "prequeue":
		if c.Mode == event.FCFS {
			st["eta_seconds"] = previewETA
		}
	case "sold_out", "not_selected", "closed":
		pv.Res = map[string]any{"k": state}
	}
	d.Runtime = r.runtime(c.ID, lang, d.T, pv)
	return d
}

// etaText words a wait as the runtime does.
func etaText(msgs map[string]string, sec int64) string {
	mins := (sec + 59) / 60
	fill := func(k string, kv ...string) string {
		return strings.NewReplacer(kv...).Replace(msgs[k])
	}
	switch {
	case sec < 60:
		return msgs["etaLt"]
	case mins < 60:
		return fill("etaMin", "{m}", strconv.FormatInt(mins, 10))
	}
	return fill("etaH", "{h}", strconv.FormatInt(mins/60, 10), "{m}", strconv.FormatInt(mins%60, 10))
}

func mustHex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}
