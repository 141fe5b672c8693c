package web

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// AccessLog says which requests the edge writes an access-log line for. A
// flash sale is millions of status polls: logging them all costs more than
// answering them, so the default logs only what an operator acts on.
type AccessLog string

// Access-log modes.
const (
	// AccessLogOff writes no access log (errors are still logged by the
	// error handler).
	AccessLogOff AccessLog = "off"
	// AccessLogErrors logs 5xx answers and requests slower than
	// Config.SlowRequest.
	AccessLogErrors AccessLog = "errors"
	// AccessLogAll logs every request.
	AccessLogAll AccessLog = "all"
)

// ParseAccessLog reads an access-log mode: off, errors or all.
func ParseAccessLog(s string) (AccessLog, error) {
	switch m := AccessLog(s); m {
	case AccessLogOff, AccessLogErrors, AccessLogAll:
		return m, nil
	}
	return "", fmt.Errorf("access log %q: want off, errors or all", s)
}

// defaultSlowRequest is Config.SlowRequest's default.
const defaultSlowRequest = time.Second

// instrument installs the outermost middleware, observe, on app.
func (s *Server) instrument(app *fiber.App) {
	s.routes = &routeTemplates{app: app}
	app.Use(s.observe)
}

// access writes the access-log line of one request, if the mode asks for
// it: level WARN for 5xx and slow answers, INFO otherwise. Every line
// carries the request id that the problem+json body (if any) also shows.
func (s *Server) access(c *fiber.Ctx, route, method string, status int, d time.Duration) {
	mode := s.cfg.AccessLog
	if mode == "" {
		mode = AccessLogErrors
	}
	slow := s.cfg.SlowRequest
	if slow <= 0 {
		slow = defaultSlowRequest
	}
	bad := status >= 500 || d >= slow
	if mode == AccessLogOff || mode == AccessLogErrors && !bad {
		return
	}
	level := slog.LevelInfo
	if bad {
		level = slog.LevelWarn
	}
	s.cfg.Log.LogAttrs(c.UserContext(), level, "request",
		slog.String("request_id", kit.RequestID(c)),
		slog.String("method", method),
		slog.String("route", route),
		slog.String("path", c.Path()),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
		slog.Bool("slow", d >= slow),
	)
}
