package pages

import (
	_ "embed"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/anteroom/anteroom/web/shopper"
	"github.com/gofiber/fiber/v2"
)

// The basic page is the waiting room without JavaScript (shopper's
// basic.go has its rules): assets/basic.html, rendered for one visitor at
// every load, in their language with the sale's published branding. It
// has no script at all; forms post to this site only, and the page
// reloads itself with a meta refresh at the status poll's pace, which the
// visitor can turn off (WCAG 2.2.1: the first link of the page; the
// choice is kept in RefreshCookie).

//go:embed assets/basic.html
var basicHTML string

// basicTemplate is assets/basic.html, parsed once; the file is part of
// the binary, so a parse error is a build defect the tests catch.
var basicTemplate = template.Must(template.New("basic").Parse(basicHTML))

// RefreshCookie keeps a visitor's choice to stop the basic page's
// automatic refresh ("off").
const RefreshCookie = "anteroom_refresh"

// basicCSP is the basic page's policy: no script at all, inline styles
// for the branding, images from data: and the logo's origin, forms to
// this site only, framed by the event's frame_ancestors (kit.FrameAncestors)
// like the room page.
func basicCSP(logo, frameAncestors string) string {
	img := "data:"
	if o := event.LogoOrigin(logo); o != "" {
		img += " " + o
	}
	return "default-src 'none'; style-src 'unsafe-inline'; img-src " + img +
		"; form-action 'self'; base-uri 'none'; frame-ancestors " + frameAncestors
}

// basicData is what assets/basic.html sees.
type basicData struct {
	PageData
	// Self is the page's address; Room the script page's.
	Self, Room string
	// Refresh is the meta refresh's content ("5; url=…"), empty for none.
	Refresh template.HTMLAttr
	// RefreshNote says how often the page refreshes; Toggle is the link
	// that turns the refresh off (Auto) or on again.
	RefreshNote, Toggle string
	Auto                bool
	// Polling: the page would refresh; with Auto off it offers "check now".
	Polling bool
	// Meta is the sale's line (mode, units); Phase what happens when.
	Meta, Phase string
	// Queue shows the place: StateText, the figures, Note.
	Queue                   bool
	StateText, Note         string
	PosText, AheadText, ETA string
	// Claim shows the claim form; CanJoin the join form, JoinLabel its
	// button.
	Claim, CanJoin bool
	JoinLabel      string
	Form, Idem     string
	// Msg is the outcome or refusal shown, if any.
	Msg *basicMsg
}

// basicMsg is one message box: its kind (a problem's code or the
// outcome), CSS class, text and smaller second line.
type basicMsg struct {
	Kind, Class, Text, Sub string
}

// Basic renders the basic page of sale (nil: an unknown event) for view v
// as c's answer (shopper.BasicRenderer), with the status c already has.
// It reads the node's view and, on a new published version only, the page
// store: a refresh costs no Redis call.
func (s *Pages) Basic(c *fiber.Ctx, sale *admission.Sale, v shopper.BasicView) error {
	lang := negotiate(c.Query("lang"), c.Cookies(LangCookie), c.Get(fiber.HeaderAcceptLanguage))
	if q := strings.ToLower(c.Query("lang")); q == lang.Code {
		c.Cookie(&fiber.Cookie{Name: LangCookie, Value: lang.Code, Path: "/", MaxAge: 365 * 24 * 3600,
			Secure: c.Protocol() == "https", SameSite: fiber.CookieSameSiteLaxMode})
	}
	auto := true
	switch c.Query("refresh") {
	case "off":
		auto = false
		c.Cookie(&fiber.Cookie{Name: RefreshCookie, Value: "off", Path: "/", MaxAge: 365 * 24 * 3600, HTTPOnly: true,
			Secure: c.Protocol() == "https", SameSite: fiber.CookieSameSiteLaxMode})
	case "on":
		c.ClearCookie(RefreshCookie)
	default:
		auto = c.Cookies(RefreshCookie) != "off"
	}
	now := s.now()
	var cfg event.Config
	var page *event.Page
	soldOut := false
	if sale != nil {
		cfg, soldOut = sale.Config, sale.SoldOut
		ctx, cancel := s.ctx(c)
		p, err := s.pages.publishedPage(ctx, s.deps.Pages, cfg.ID, cfg.PageVersion)
		cancel()
		if err != nil {
			s.cfg.Log.Warn("page store", "request_id", kit.RequestID(c), "err", err)
		}
		page = p
	}
	d := basicData{PageData: s.pages.data(&cfg, page, lang, now, soldOut), Auto: auto}
	d.Runtime = ""
	if sale != nil {
		fairness(&d.PageData, sale)
		d.Self, d.Room = shopper.BasicPath(cfg.ID), "/e/"+cfg.ID
	}
	basicView(&d, &cfg, v, now)
	body, err := s.pages.executeBasic(&d)
	if err != nil {
		return err
	}
	ancestors := kit.FrameAncestors(&cfg)
	setPageHeaders(c, basicCSP(string(d.Brand.LogoURL), ancestors))
	kit.SetFrameOptions(c, ancestors)
	// Same-origin, not no-referrer: the page's own form posts then carry
	// their Origin, which protect.CheckForm compares.
	c.Set(fiber.HeaderReferrerPolicy, "same-origin")
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(body)
}

// basicView fills d with what v shows of sale cfg at now.
func basicView(d *basicData, cfg *event.Config, v shopper.BasicView, now time.Time) {
	t := func(k string, kv ...string) string {
		s := d.T[k]
		for i := 0; i+1 < len(kv); i += 2 {
			s = strings.ReplaceAll(s, "{"+kv[i]+"}", kv[i+1])
		}
		return s
	}
	d.State = v.State
	if cfg.ID == "" { // an unknown event
		d.Msg = &basicMsg{Kind: "unknown_event", Class: "bad", Text: t("unknown")}
		return
	}
	lot := cfg.Mode == event.Lottery
	w := clockUTC(cfg.WindowEnd())
	switch {
	case lot:
		d.Meta = t("lottery")
	case cfg.WindowEnd().After(cfg.StartsAt):
		d.Meta = t("fcfsWin", "n", strconv.FormatInt(cfg.RandomWindowSeconds, 10))
	default:
		d.Meta = t("fcfs")
	}
	if cfg.Mode != event.SafetyNet {
		units := "units"
		if cfg.OnSale() == 1 {
			units = "unit"
		}
		d.Meta += " · " + t(units, "n", strconv.FormatInt(cfg.OnSale(), 10), "l", strconv.FormatInt(cfg.PerUserLimit, 10))
	}
	d.Phase = t(phaseKey(cfg, d.Event.State, now), "t", clockUTC(cfg.PrequeueOpensAt), "w", w)
	if v.Refresh > 0 {
		d.Polling = true
		secs := int(math.Ceil(v.Refresh.Seconds())) // never sooner than the poll asks
		if d.Auto {
			d.Refresh = template.HTMLAttr(`content="` + strconv.Itoa(secs) + `; url=` + d.Self + `"`)
			d.RefreshNote = t("b_refresh", "s", strconv.Itoa(secs))
			d.Toggle = d.Self + "?refresh=off"
		} else {
			d.Toggle = d.Self + "?refresh=on"
		}
	}
	d.CanJoin, d.Form, d.Idem = v.CanJoin, v.Form, v.Idem
	d.JoinLabel = t("join")
	if lot {
		d.JoinLabel = t("register")
	}
	switch v.State {
	case string(admission.Prequeue), string(admission.Waiting), string(admission.Paused), string(admission.Admitted):
		d.Queue = true
		key := v.State
		if key == string(admission.Prequeue) && lot {
			key = "prequeueLot"
		}
		d.StateText = t("st_" + key)
		d.Note = t("q_"+key, "w", w, "t", clockUTC(v.ExpiresAt))
		if v.State == string(admission.Waiting) && !d.Auto {
			d.Note = "" // "it updates by itself": not once the visitor turned that off
		}
		d.PosText, d.AheadText, d.ETA = "—", "—", "—"
		if v.Position > 0 {
			d.PosText = strconv.FormatInt(v.Position, 10)
		}
		switch v.State {
		case string(admission.Waiting), string(admission.Paused):
			d.AheadText = strconv.FormatInt(v.Ahead, 10)
		case string(admission.Admitted):
			d.AheadText = "0"
		}
		if v.State == string(admission.Waiting) || v.State == string(admission.Prequeue) {
			d.ETA = etaText(d.T, int64(math.Ceil(v.ETA.Seconds())))
		}
		d.Claim = v.State == string(admission.Admitted) && v.Form != ""
	case shopper.Granted:
		sub := t("grantedId", "id", v.ClaimID)
		if cs, ok := d.T["cs_"+string(v.ClaimStatus)]; ok {
			sub += " · " + cs
		}
		d.Msg = &basicMsg{Kind: shopper.Granted, Class: "ok", Text: t("granted"), Sub: sub}
	case string(admission.SoldOut), string(admission.NotSelected), string(admission.Closed):
		d.Msg = &basicMsg{Kind: v.State, Class: "bad", Text: t(v.State)}
		if v.State == string(admission.Closed) {
			d.Msg.Class = "info"
			if cfg.IsClosed() { // by staff, for now: not the sale's end
				d.Msg = closureMsg(t, cfg)
			}
		}
	}
	if p := v.Problem; p != nil {
		d.Msg = problemMsg(t, p)
		if p.Code == "closed" && cfg.IsClosed() {
			d.Msg = closureMsg(t, cfg)
		}
		d.CanJoin, d.Claim = false, false
	}
}

// closureMsg is the message box of a room staff closed (event.Closure),
// as the room page shows it: their message, or the catalog's roomClosed,
// and when they expect to reopen.
func closureMsg(t func(string, ...string) string, cfg *event.Config) *basicMsg {
	m := &basicMsg{Kind: string(admission.Closed), Class: "info", Text: cfg.Closed.Message}
	if m.Text == "" {
		m.Text = t("roomClosed")
	}
	if u := cfg.Closed.Until; u != nil {
		m.Sub = t("roomClosedUntil", "t", clockUTC(*u))
	}
	return m
}

// problemMsg is the message box of a refusal: the catalog's words for
// its code, and the problem's own detail (English) with the request id,
// which support can look up.
func problemMsg(t func(string, ...string) string, p *kit.Problem) *basicMsg {
	s := strconv.Itoa(max(p.RetryAfter, 1))
	m := &basicMsg{Kind: p.Code, Class: "warn"}
	switch p.Code {
	case "sold_out", "not_selected":
		m.Class, m.Text = "bad", t(p.Code)
	case "limit_reached":
		m.Text = t("limit_reached")
		if len(p.ClaimIDs) > 0 {
			m.Sub = t("limitIds", "ids", strings.Join(p.ClaimIDs, ", "))
			return m
		}
	case "rate_limited", "degraded", "paused":
		m.Text = t(p.Code, "s", s)
	case "not_open":
		m.Class, m.Text = "info", t("notOpen", "s", s)
	case "pow_required", "captcha_required", "captcha_failed", "captcha_unavailable":
		m.Class, m.Text = "info", t("b_needsJs")
	case "invite_required", "invite_invalid":
		m.Class, m.Text = "info", t("b_invite")
	case "unknown_event", "not_found":
		m.Class, m.Text = "bad", t("unknown")
	case "unauthenticated":
		m.Text = t("b_unauth")
	case "forbidden":
		m.Class, m.Text = "bad", t("b_forbidden")
	case "bad_request":
		m.Class, m.Text = "bad", t("b_form")
	default:
		m.Class, m.Text = "bad", t("error", "d", p.Title)
	}
	m.Sub = p.Detail
	if p.RequestID != "" {
		m.Sub += " (" + p.RequestID + ")"
	}
	return m
}

// phaseKey picks the sale's phase message, as room.js does.
func phaseKey(cfg *event.Config, state string, now time.Time) string {
	lot := cfg.Mode == event.Lottery
	switch {
	case state == string(event.SoldOut):
		return "phSold"
	case state == string(event.Closed):
		return "phClosed"
	case cfg.Paused:
		return "phPaused"
	case now.Before(cfg.PrequeueOpensAt) && lot:
		return "phUpLot"
	case now.Before(cfg.PrequeueOpensAt):
		return "phUp"
	case lot && now.Before(cfg.StartsAt):
		return "phLot"
	case lot:
		return "phLotDone"
	case now.Before(cfg.WindowEnd()):
		return "phFcfs"
	}
	return "phOpen"
}

// clockUTC writes an instant as the basic page shows it: hh:mm:ss UTC (it
// does not know the visitor's time zone).
func clockUTC(at time.Time) string {
	if at.IsZero() {
		return "—"
	}
	return at.UTC().Format("15:04:05") + " UTC"
}

func (r *pageRenderer) executeBasic(d *basicData) ([]byte, error) {
	var buf cappedBuffer
	if err := basicTemplate.Execute(&buf, d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// noscript is the part of {{.Runtime}} that leads a browser without
// JavaScript to event id's basic page (an operator's template gets it
// too; the built-in page also redirects there from its <head>): a link,
// in the visitor's language. None for an unknown event.
func noscript(id string, msgs map[string]string) string {
	if id == "" {
		return ""
	}
	return `<noscript><p><a id="basic" href="` + template.HTMLEscapeString(shopper.BasicPath(id)) + `">` +
		template.HTMLEscapeString(msgs["b_noscript"]) + "</a></p></noscript>\n"
}
