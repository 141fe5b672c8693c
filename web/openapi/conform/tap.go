package conform

import (
	"fmt"
	"net/http"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// Tap is a fiber middleware that checks every exchange of the app it is
// mounted on, after the answer is made, and hands report each exchange
// outside the contract. Mounted outermost (web.Config.Tap, which
// internal/nodetest sets on every node it starts), it sees what any
// client sees: a test's raw HTTP calls, a proxy's, a browser's. It never
// changes an answer.
func (c *Checker) Tap(report func(error)) fiber.Handler {
	return func(ctx *fiber.Ctx) error {
		if err := ctx.Next(); err != nil { // the node's layers answer their own; in case
			if herr := ctx.App().ErrorHandler(ctx, err); herr != nil {
				return herr
			}
		}
		req := new(http.Request)
		if err := fasthttpadaptor.ConvertRequest(ctx.Context(), req, true); err != nil {
			report(fmt.Errorf("read the request back: %w", err))
			return nil
		}
		resp := ctx.Response()
		header := http.Header{}
		resp.Header.VisitAll(func(k, v []byte) { header.Add(string(k), string(v)) })
		if err := c.Check(req, ctx.Request().Body(), resp.StatusCode(), header, resp.Body()); err != nil {
			report(err)
		}
		return nil
	}
}
