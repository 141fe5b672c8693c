package staffapi

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

// getReport answers GET /admin/events/{id}/report.
func (s *API) getReport(c *fiber.Ctx) error {
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
func (s *API) exportReport(c *fiber.Ctx) error {
	r, err := s.buildReport(c)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="anteroom-report-`+r.Event+`.csv"`)
	return report.WriteCSV(c.Response().BodyWriter(), &r)
}

func (s *API) buildReport(c *fiber.Ctx) (report.Report, error) {
	if s.deps.Report == nil {
		return report.Report{}, kit.RetryLater("degraded", "reports are not available on this node", 5)
	}
	// Long enough to read the order stream of a large sale.
	ctx, cancel := context.WithTimeout(c.UserContext(), 4*s.cfg.Timeout)
	defer cancel()
	return s.deps.Report(ctx, c.Params("id"))
}
