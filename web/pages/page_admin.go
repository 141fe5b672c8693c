package pages

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// The page's life: staff save branding and template as a draft (PUT
// /admin/events/{id}/page, checked like the live page would run it),
// preview the draft in every state and language (GET .../preview), then
// publish it (POST .../page/publish): the live page shows only what was
// published. Each step is in the audit trail.

// pageJSON is the staff view of an event's page.
type pageJSON struct {
	Draft     *event.Page `json:"draft"`
	Published *event.Page `json:"published"`
	// DraftSHA256 names the draft; publish may ask for exactly it.
	DraftSHA256 string   `json:"draft_sha256,omitempty"`
	States      []string `json:"states"`
	Languages   []string `json:"languages"`
}

func pageView(p *event.Pages) pageJSON {
	return pageJSON{Draft: p.Draft, Published: p.Published, DraftSHA256: pageDigest(p.Draft),
		States: previewStates, Languages: languageCodes()}
}

// pageDigest is the lowercase hex SHA-256 of a page's JSON, "" for none.
func pageDigest(p *event.Page) string {
	if p == nil {
		return ""
	}
	b, _ := json.Marshal(p)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// errNoPages answers the page routes on a node without a page store.
var errNoPages = kit.RetryLater("degraded", "pages are not kept on this node", 5)

// eventPages reads event id's configuration (404 for an unknown event)
// and its pages.
func (s *Pages) eventPages(ctx context.Context, id string) (event.Config, event.Pages, error) {
	if s.deps.Pages == nil {
		return event.Config{}, event.Pages{}, errNoPages
	}
	cfg, err := s.deps.Configs.Get(ctx, id)
	if err != nil {
		return cfg, event.Pages{}, err
	}
	pages, err := s.deps.Pages.Pages(ctx, id)
	return cfg, pages, err
}

// getPage answers GET /admin/events/{id}/page.
func (s *Pages) getPage(c *fiber.Ctx) error {
	ctx, cancel := s.ctx(c)
	defer cancel()
	_, pages, err := s.eventPages(ctx, c.Params("id"))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(pageView(&pages))
}

// putPageDraft answers PUT /admin/events/{id}/page: the body (an
// event.Page) becomes the draft once it passes checkPage.
func (s *Pages) putPageDraft(c *fiber.Ctx) error {
	id := strings.Clone(c.Params("id"))
	var draft event.Page
	dec := json.NewDecoder(bytes.NewReader(c.Body()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&draft); err != nil {
		return kit.BadRequest("malformed page JSON: %s", kit.JSONProblem(err))
	}
	if dec.More() {
		return kit.BadRequest("malformed page JSON: trailing data")
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	old, saved, err := s.updatePages(ctx, id, func(cfg *event.Config, p *event.Pages) error {
		if err := s.pages.checkPage(cfg, &draft, s.now()); err != nil {
			return err
		}
		p.Draft = &draft
		return nil
	})
	if err != nil {
		return err
	}
	s.deps.Record(c, "page.draft", id, old.Draft, saved.Draft)
	return c.JSON(pageView(&saved))
}

// publishJSON is the optional body of POST
// /admin/events/{id}/page/publish.
type publishJSON struct {
	DraftSHA256 string `json:"draft_sha256"`
}

// publishPage answers POST /admin/events/{id}/page/publish: the draft
// becomes the live page. An optional body {"draft_sha256": ...} publishes
// only the draft that was previewed (409 conflict if it changed since).
// The event's configuration then names the published version, so every
// node renders it at its next refresh.
func (s *Pages) publishPage(c *fiber.Ctx) error {
	id := strings.Clone(c.Params("id"))
	var in publishJSON
	if body := bytes.TrimSpace(c.Body()); len(body) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return kit.BadRequest("malformed publish JSON: %s", kit.JSONProblem(err))
		}
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	old, saved, err := s.updatePages(ctx, id, func(cfg *event.Config, p *event.Pages) error {
		if p.Draft == nil {
			return kit.NewProblem(fiber.StatusConflict, "conflict", "there is no draft to publish: save one with PUT /admin/events/"+id+"/page")
		}
		if in.DraftSHA256 != "" && in.DraftSHA256 != pageDigest(p.Draft) {
			return kit.NewProblem(fiber.StatusConflict, "conflict", "the draft changed since it was previewed; preview it again")
		}
		// Checked again: a draft saved by an older node may predate a rule.
		if err := s.pages.checkPage(cfg, p.Draft, s.now()); err != nil {
			return err
		}
		published := *p.Draft
		p.Published, p.PublishedVersion = &published, p.Version+1 // the version this save gets
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.setPageVersion(ctx, id, saved.PublishedVersion); err != nil {
		return err
	}
	s.deps.Record(c, "page.publish", id, old.Published, saved.Published)
	return c.JSON(pageView(&saved))
}

// updatePages applies change to the stored pages with the store's
// compare-and-set, retrying a few times on a concurrent save. It returns
// the pages before and after.
func (s *Pages) updatePages(ctx context.Context, id string, change func(*event.Config, *event.Pages) error) (event.Pages, event.Pages, error) {
	for attempt := 0; ; attempt++ {
		cfg, old, err := s.eventPages(ctx, id)
		if err != nil {
			return old, old, err
		}
		next := old
		if err := change(&cfg, &next); err != nil {
			return old, old, err
		}
		saved, err := s.deps.Pages.PutPages(ctx, id, next)
		if errors.Is(err, event.ErrConflict) && attempt < 3 {
			continue
		}
		return old, saved, err
	}
}

// setPageVersion makes the event's configuration name the published page
// (a newer one is never replaced by an older), and this node's view current.
func (s *Pages) setPageVersion(ctx context.Context, id string, version int64) error {
	for attempt := 0; ; attempt++ {
		cfg, err := s.deps.Configs.Get(ctx, id)
		if err != nil {
			return err
		}
		if cfg.PageVersion >= version {
			break
		}
		cfg.PageVersion = version
		_, err = s.deps.Configs.Put(ctx, cfg)
		if errors.Is(err, event.ErrConflict) && attempt < 3 {
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	return s.deps.Sales.Reload(ctx, id)
}

// previewPage answers GET /admin/events/{id}/preview?state=&lang=&page=:
// the waiting room of the draft (page=draft, the default; the published
// page when there is no draft) or the published page (page=published) in
// one visitor state with sample figures. It may be framed by the console.
func (s *Pages) previewPage(c *fiber.Ctx) error {
	state := c.Query("state", "waiting")
	if !slices.Contains(previewStates, state) {
		return kit.BadRequest("state must be one of %s", strings.Join(previewStates, ", "))
	}
	lang, ok := langByCode(strings.ToLower(c.Query("lang", "en")))
	if !ok {
		return kit.BadRequest("lang must be one of %s", strings.Join(languageCodes(), ", "))
	}
	which := c.Query("page", "draft")
	if which != "draft" && which != "published" {
		return kit.BadRequest("page must be draft or published")
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	cfg, pages, err := s.eventPages(ctx, c.Params("id"))
	if err != nil {
		return err
	}
	page := pages.Published
	if which == "draft" && pages.Draft != nil {
		page = pages.Draft
	}
	d := s.pages.preview(&cfg, page, lang, state, s.now())
	body, err := s.pages.renderPage(page, &d)
	if err != nil {
		var p *kit.Problem
		if errors.As(err, &p) {
			return p
		}
		return errTemplateProblem(err)
	}
	setPageHeaders(c, roomCSP(string(d.Brand.LogoURL), "'self'"))
	c.Set(fiber.HeaderXFrameOptions, "SAMEORIGIN")
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(body)
}
