package web

import (
	"context"
	_ "embed"

	"github.com/anteroom/anteroom/report"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// The post-sale report (package report): GET /admin/events/{id}/report as
// JSON, /report.csv as CSV, and the console page /admin/report?event={id}
// that draws it. Viewers may read it.

//go:embed assets/report.html
var reportHTML []byte

// refusalCounter counts the requests join and claim refused, by reason
// (*report.Refusals: node-local, flushed to Redis in the background).
type refusalCounter interface {
	Add(ev, reason string)
}

// refusalCodes are the problem codes of join and claim that count as a
// refusal in the report: the edge's defences and the sale's answers
// ("no"), not malformed requests or failures of a backing service.
var refusalCodes = map[string]bool{
	"rate_limited": true, "pow_required": true, "invite_required": true,
	"captcha_required": true, "captcha_failed": true, "captcha_unavailable": true, "sold_out": true,
	"not_selected": true, "limit_reached": true, "not_open": true, "forbidden": true,
}

// countRefusal counts the problem a join or claim was answered with as a
// refusal of the event when it is one (refusalCodes). Called by observe
// after kit.ErrorHandler, whose problem it reads, so an error is mapped once.
func (s *Server) countRefusal(c *fiber.Ctx) {
	p, _ := c.Locals(kit.ProblemLocal).(*kit.Problem)
	if p == nil || s.deps.Refusals == nil {
		return
	}
	var stage string
	switch c.Route().Path {
	case "/events/:id/join":
		stage = "join."
	case "/events/:id/claim":
		stage = "claim."
	default:
		return
	}
	sale, ok := kit.LoadedSale(c)
	if !ok {
		return
	}
	if refusalCodes[p.Code] {
		s.deps.Refusals.Add(sale.Config.ID, stage+p.Code)
	}
}

// getReport answers GET /admin/events/{id}/report.
func (s *Server) getReport(c *fiber.Ctx) error {
	r, err := s.buildReport(c)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	if c.Query("download") != "" {
		c.Set(fiber.HeaderContentDisposition, `attachment; filename="anteroom-report-`+r.Event+`.json"`)
	}
	return c.JSON(r)
}

// exportReport answers GET /admin/events/{id}/report.csv.
func (s *Server) exportReport(c *fiber.Ctx) error {
	r, err := s.buildReport(c)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="anteroom-report-`+r.Event+`.csv"`)
	return report.WriteCSV(c.Response().BodyWriter(), &r)
}

func (s *Server) buildReport(c *fiber.Ctx) (report.Report, error) {
	if s.deps.Report == nil {
		return report.Report{}, kit.RetryLater("degraded", "reports are not available on this node", 5)
	}
	// Long enough to read the order stream of a large sale.
	ctx, cancel := context.WithTimeout(c.UserContext(), 4*s.cfg.Timeout)
	defer cancel()
	return s.deps.Report(ctx, c.Params("id"))
}

// reportPage serves the console's report page; it reads the event id from
// its query and the figures from the JSON API with the console session.
func (s *Server) reportPage(c *fiber.Ctx) error {
	setPageHeaders(c, consoleCSP)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(reportHTML)
}
