package web

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/anteroom/anteroom/web/kit"
	"github.com/anteroom/anteroom/web/staffapi"
	"github.com/gofiber/fiber/v2"
)

// Request bodies reach the app as streams (FiberConfig sets fasthttp's
// StreamRequestBody): a list upload (staffapi.StreamsBody) is read by its
// handler as it arrives, hundreds of megabytes under its own limit, never
// whole in memory. Every other route is held to BodyLimit by limitBody,
// which reads the body whole before any handler runs, so they see
// c.Body() as without streaming.
//
// A body not read to its end stays on the connection, where the next
// request would be read from: limitBody closes the connection after the
// answer of such a request (one over the limit, an upload), so the rest
// of a body is never taken for a request. Before it closes, it reads and
// drops up to lingerBytes of what is left, for at most lingerTime (as
// nginx's lingering close): a socket closed with unread bytes resets the
// connection, and the reset can overtake the 413 on its way to a client
// still sending.

// lingerBytes and lingerTime bound the drain of a body left unread.
const (
	lingerBytes = 1 << 20
	lingerTime  = 500 * time.Millisecond
)

// drop drains and drops what is left of the body of c's request (see
// lingerBytes) and marks the connection to close after the answer.
func drop(c *fiber.Ctx) {
	c.Response().Header.SetConnectionClose()
	req := c.Request()
	if req.IsBodyStream() {
		if conn := c.Context().Conn(); conn != nil {
			_ = conn.SetReadDeadline(time.Now().Add(lingerTime))
		}
		_, _ = io.CopyN(io.Discard, req.BodyStream(), lingerBytes)
	}
	req.ResetBody()
}

// bodyBufs are the buffers limitBody reads bodies into.
var bodyBufs = sync.Pool{New: func() any { b := make([]byte, BodyLimit+1); return &b }}

// errTooLarge answers a body over BodyLimit (kit's too_large row).
var errTooLarge = fiber.ErrRequestEntityTooLarge

// limitBody holds every request's body but a list upload's to BodyLimit
// (413 too_large, answered without reading it) and reads it whole before
// the handlers; see above.
func limitBody(c *fiber.Ctx) error {
	req := c.Request()
	if !req.IsBodyStream() {
		return c.Next()
	}
	if staffapi.StreamsBody(c.Method(), c.Path()) {
		defer drop(c) // whatever the handler read, the rest is never a request
		return c.Next()
	}
	n := req.Header.ContentLength() // -1: chunked
	if n > BodyLimit {
		drop(c)
		return errTooLarge
	}
	buf := bodyBufs.Get().(*[]byte)
	defer bodyBufs.Put(buf)
	b := *buf
	if n >= 0 {
		b = b[:n]
	}
	got, err := io.ReadFull(req.BodyStream(), b)
	switch {
	case n < 0 && err == nil: // more than BodyLimit chunked bytes
		drop(c)
		return errTooLarge
	case n < 0 && (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)):
		err = nil
	}
	if err != nil {
		c.Response().Header.SetConnectionClose()
		req.ResetBody()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fiber.ErrRequestTimeout
		}
		return kit.BadRequest("the request body could not be read")
	}
	req.SetBody(b[:got]) // copied into the request's own buffer; closes the stream
	return c.Next()
}
