//go:build soak && linux

package soak

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/anteroom/anteroom/internal/wait"
)

// basicNote marks the history's ops of the basic page's shoppers.
const basicNote = "basic page"

// What the soak reads off the basic page (web/pages/assets/basic.html):
// the visitor's state, their position, the forms' hidden values, the
// outcome's code (the problem's, or "granted") and the claim granted, and
// when the page reloads itself.
var (
	pageState   = regexp.MustCompile(`<html [^>]*data-state="([a-z_]*)"`)
	pagePos     = regexp.MustCompile(`<dd id="pos">([0-9]+)</dd>`)
	pageForm    = regexp.MustCompile(`name="form" value="([^"]+)"`)
	pageIdem    = regexp.MustCompile(`name="idem" value="([^"]+)"`)
	pageResult  = regexp.MustCompile(`id="result" class="msg [a-z]+" data-kind="([a-z_]+)"`)
	pageClaim   = regexp.MustCompile(`\b([0-9]+-[0-9a-f]{8,})\b`)
	pageRefresh = regexp.MustCompile(`http-equiv="refresh" content="([0-9]+)`)
)

// page is one basic-page exchange: the status, the body and whether
// Retry-After came.
type page struct {
	status int
	body   string
	retry  bool
}

// pageOp sends one basic-page request for s (a form when form is not nil)
// through jar's client, records it as kind and returns it; the op carries
// the page's state, position, outcome code and claim.
func (c *crowd) pageOp(ctx context.Context, s *shopper, hc *http.Client, kind, method, path string, form url.Values, key string) (page, op) {
	u := c.urls[s.node%len(c.urls)]
	o := op{Sale: s.sale, User: s.id, Kind: kind, Node: strconv.Itoa(s.node % len(c.urls)), Key: key, Note: basicNote}
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequestWithContext(rctx, method, u+path, body)
	req.Header.Set("X-User-ID", s.id)
	req.Header.Set("Accept", "text/html")
	for k, v := range signalHeaders(s, key) { // the shop's gateway adds them
		req.Header.Set(k, v)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	o.Start = time.Now()
	resp, err := hc.Do(req)
	var p page
	if err == nil {
		var raw []byte
		raw, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		p = page{status: resp.StatusCode, body: string(raw), retry: resp.Header.Get("Retry-After") != ""}
	}
	if err != nil {
		if ctx.Err() != nil {
			return p, o
		}
		o.Err = shortErr(err)
		s.node++
		c.h.record(o)
		return p, o
	}
	o.Status, o.Retry = p.status, p.retry
	if m := pageState.FindStringSubmatch(p.body); m != nil {
		o.State = m[1]
	}
	if m := pagePos.FindStringSubmatch(p.body); m != nil {
		o.Pos, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := pageResult.FindStringSubmatch(p.body); m != nil {
		o.Code = m[1]
		if o.Code == "granted" {
			o.Code = ""
			if m := pageClaim.FindStringSubmatch(p.body[strings.Index(p.body, `id="result"`):]); m != nil {
				o.ClaimID = m[1]
			}
		}
	}
	c.h.record(o)
	return p, o
}

// pageRetry waits before asking the page again: its own refresh, at
// least 100 ms and at most a second (the soak's shoppers are impatient,
// as pollAfter says); false when the run ended.
func pageRetry(ctx context.Context, p page) bool {
	d := time.Second
	if m := pageRefresh.FindStringSubmatch(p.body); m != nil {
		n, _ := strconv.Atoi(m[1])
		d = time.Duration(n) * time.Second
	}
	return wait.Sleep(ctx, min(max(d, 100*time.Millisecond), time.Second))
}

// playBasic runs shopper s through the basic page, the waiting room
// without JavaScript: the lobby's join form, the page reloaded until it
// shows the admission and its claim form, and one claim, its form sent
// again under the same idempotency key until it is answered. The cookies
// the node sets carry the ticket and the admission, as in a browser.
func (c *crowd) playBasic(ctx context.Context, s *shopper) {
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Transport: c.client.Transport, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	self := "/e/" + s.sale + "/basic"
	// The lobby, until its join form takes the shopper.
	for joined := false; !joined; {
		p, o := c.pageOp(ctx, s, hc, "page", http.MethodGet, self, nil, "")
		m := pageForm.FindStringSubmatch(p.body)
		if o.Err != "" || p.status != http.StatusOK || m == nil {
			if o.Status == http.StatusOK && (o.State == "sold_out" || o.State == "not_selected") {
				return
			}
			if ctx.Err() != nil || !pageRetry(ctx, p) {
				return
			}
			continue
		}
		p, o = c.pageOp(ctx, s, hc, "bjoin", http.MethodPost, self+"/join", url.Values{"form": {m[1]}}, "")
		switch {
		case o.Status == http.StatusSeeOther:
			joined = true
		case o.Err == "" && o.Status != http.StatusTooManyRequests && o.Status < 500:
			return // a final refusal
		case !pageRetry(ctx, p):
			return
		}
	}
	if s.abandon == 1 {
		return
	}
	// The page, until it admits.
	var p page
	var o op
	for {
		p, o = c.pageOp(ctx, s, hc, "status", http.MethodGet, self, nil, "")
		if o.Status == http.StatusOK && o.State == "admitted" && pageForm.MatchString(p.body) && pageIdem.MatchString(p.body) {
			break
		}
		if o.Status == http.StatusOK && (o.State == "sold_out" || o.State == "not_selected") {
			return
		}
		if !pageRetry(ctx, p) {
			return
		}
	}
	if s.abandon == 2 {
		return
	}
	form := url.Values{"form": {pageForm.FindStringSubmatch(p.body)[1]}, "idem": {pageIdem.FindStringSubmatch(p.body)[1]}}
	for {
		p, o = c.pageOp(ctx, s, hc, "claim", http.MethodPost, self+"/claim", form, form.Get("idem"))
		if o.Err == "" && o.Status != http.StatusTooManyRequests && o.Status < 500 {
			return
		}
		if !pageRetry(ctx, p) {
			return
		}
	}
}
