package kit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Bearer returns the token of an "Authorization: Bearer" header, or "".
// The string points into fasthttp's buffer: clone what outlives c.
func Bearer(c *fiber.Ctx) string {
	h := c.Get(fiber.HeaderAuthorization)
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// SendJSON answers the JSON body b, copied into the response's own pooled
// buffer (so b may live on the caller's stack).
func SendJSON(c *fiber.Ctx, b []byte) error {
	c.Response().Header.SetContentType(fiber.MIMEApplicationJSON)
	c.Response().SetBody(b)
	return nil
}

// DecodeStrict decodes a JSON body, refusing unknown fields; what names
// the body in the 400 answer.
func DecodeStrict(c *fiber.Ctx, what string, v any) error {
	dec := json.NewDecoder(bytes.NewReader(c.Body()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return BadRequest("malformed %s JSON: %s", what, JSONProblem(err))
	}
	return nil
}

// JSONProblem says what is wrong with a JSON body, for a 400 detail,
// without echoing more than 120 bytes of the decoder's message.
func JSONProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q must be %s", te.Field, te.Type)
	case errors.Is(err, io.EOF):
		return "empty body"
	}
	msg := err.Error()
	if len(msg) > 120 {
		msg = msg[:120]
	}
	return msg
}
