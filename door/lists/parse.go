package lists

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Format is an upload's format.
type Format string

// The upload formats.
const (
	// CSV: one value per line, the first column (RFC 4180 quoting);
	// a first line whose first column is a header ("value", "user_id",
	// "network", "device_id", "payment_fingerprint") is skipped.
	CSV Format = "csv"
	// NDJSON: one JSON object per line, {"value": "..."}.
	NDJSON Format = "ndjson"
)

// MaxLineBytes bounds one line of an upload.
const MaxLineBytes = 64 << 10

// headers are the first columns of a CSV header line.
var headers = map[string]bool{"value": true, "user_id": true, "network": true, "device_id": true, "payment_fingerprint": true}

// scanValues reads r in format f and calls each with every value and its
// line number (from 1); blank lines are skipped. A malformed line is a
// *LineError.
func scanValues(r io.Reader, f Format, each func(line int, value string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		}
		if len(b) == 0 {
			continue
		}
		var v string
		var err error
		if f == NDJSON {
			v, err = ndjsonValue(b)
		} else {
			v, err = csvFirst(b)
			if err == nil && line == 1 && headers[strings.ToLower(v)] {
				continue
			}
		}
		if err == nil {
			err = each(line, v)
		}
		if err != nil {
			var le *LineError
			if errors.As(err, &le) || !errors.Is(err, ErrInvalid) {
				return err
			}
			return &LineError{Line: line, Err: err}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &LineError{Line: line + 1, Err: invalid("line longer than %d bytes", MaxLineBytes)}
		}
		return fmt.Errorf("lists: read upload: %w", err)
	}
	return nil
}

// csvFirst is line's first column, unquoted and trimmed.
func csvFirst(b []byte) (string, error) {
	if b[0] != '"' {
		if i := bytes.IndexByte(b, ','); i >= 0 {
			b = b[:i]
		}
		if bytes.IndexByte(b, '"') >= 0 {
			return "", invalid("a quote inside an unquoted field")
		}
		return string(bytes.TrimSpace(b)), nil
	}
	var out []byte
	for i := 1; i < len(b); i++ {
		if b[i] != '"' {
			out = append(out, b[i])
			continue
		}
		if i+1 < len(b) && b[i+1] == '"' {
			out = append(out, '"')
			i++
			continue
		}
		rest := bytes.TrimSpace(b[i+1:])
		if len(rest) > 0 && rest[0] != ',' {
			return "", invalid("text after a closing quote")
		}
		return string(bytes.TrimSpace(out)), nil
	}
	return "", invalid("an unclosed quote")
}

// ndjsonValue is the value of line {"value": "..."}.
func ndjsonValue(b []byte) (string, error) {
	const pre, post = `{"value":"`, `"}`
	if bytes.HasPrefix(b, []byte(pre)) && bytes.HasSuffix(b, []byte(post)) && len(b) >= len(pre)+len(post) {
		mid := b[len(pre) : len(b)-len(post)]
		if bytes.IndexByte(mid, '"') < 0 && bytes.IndexByte(mid, '\\') < 0 {
			return strings.TrimSpace(string(mid)), nil
		}
	}
	var o struct {
		Value *string `json:"value"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return "", invalid("not a JSON object")
	}
	if o.Value == nil {
		return "", invalid(`no "value" string`)
	}
	return strings.TrimSpace(*o.Value), nil
}
