package staffapi

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// StreamsBody reports whether a request of method to path is a list
// upload (POST /admin/lists/{name}/entries), whose body its handler reads
// as a stream under its own limit (Config.ListUploadMax); the edge holds
// every other body to its 16 KB (package web, body.go). It matches the
// path exactly as written: a spelling fiber also routes there (other
// case, a trailing slash) gets the ordinary limit.
func StreamsBody(method, path string) bool {
	if method != fiber.MethodPost {
		return false
	}
	name, ok := strings.CutPrefix(path, "/admin/lists/")
	if !ok {
		return false
	}
	name, ok = strings.CutSuffix(name, "/entries")
	return ok && name != "" && !strings.Contains(name, "/")
}

// streamIdle is how long a streamed upload or export may make no
// progress (no byte read from, or written to, the connection) before the
// connection is cut: the node's read and write timeouts (10 s) bound a
// whole request, which a list of hundreds of megabytes outlasts.
const streamIdle = 10 * time.Second

// errUploadTooLarge: the upload went over Config.ListUploadMax bytes.
var errUploadTooLarge = errors.New("staffapi: list upload over its byte limit")

// uploadBody reads a streamed upload: at most max bytes (more is
// errUploadTooLarge, the rest left unread), moving the connection's read
// deadline on as bytes arrive.
type uploadBody struct {
	r     io.Reader
	conn  net.Conn // nil: no deadline to move (a body read whole)
	left  int64
	moved time.Time
}

func (u *uploadBody) Read(p []byte) (int, error) {
	if u.left <= 0 {
		// One byte more says whether the body goes on.
		var one [1]byte
		n, err := u.r.Read(one[:])
		if n > 0 {
			return 0, errUploadTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > u.left {
		p = p[:u.left]
	}
	if u.conn != nil {
		if now := time.Now(); now.Sub(u.moved) > time.Second {
			_ = u.conn.SetReadDeadline(now.Add(streamIdle))
			u.moved = now
		}
	}
	n, err := u.r.Read(p)
	u.left -= int64(n)
	return n, err
}

// exportBody is an answer streamed from a goroutine that writes it
// (write) into a pipe: fasthttp reads the pipe as the response body and
// closes it when the answer is sent or the client is gone, which ends
// the goroutine (its writes fail) and cancels its context. A failure of
// write closes the pipe with the error: fasthttp then cuts the
// connection before the chunked body's end, so the client sees a
// truncated answer, never a short one that looks whole.
type exportBody struct {
	pr     *io.PipeReader
	conn   net.Conn
	moved  time.Time
	cancel context.CancelFunc
}

// newExportBody starts write on a context bounded by timeout; conn (nil
// in app.Test) gets its write deadline moved on as the body is read.
func newExportBody(conn net.Conn, timeout time.Duration, write func(ctx context.Context, w io.Writer) error) *exportBody {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	pr, pw := io.Pipe()
	go func() {
		defer cancel()
		pw.CloseWithError(write(ctx, pw)) // nil: EOF
	}()
	return &exportBody{pr: pr, conn: conn, cancel: cancel}
}

func (e *exportBody) Read(p []byte) (int, error) {
	n, err := e.pr.Read(p)
	// After the read, which waits for the store: what it returns gets
	// streamIdle to be written, however long the store took.
	if e.conn != nil {
		if now := time.Now(); now.Sub(e.moved) > time.Second {
			_ = e.conn.SetWriteDeadline(now.Add(streamIdle))
			e.moved = now
		}
	}
	return n, err
}

// Close ends the writing goroutine.
func (e *exportBody) Close() error {
	e.cancel()
	return e.pr.Close()
}
