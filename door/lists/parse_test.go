package lists

import (
	"errors"
	"strings"
	"testing"
)

// TestScanValues: the first CSV column (quoted or not, trimmed, a header
// and a byte-order mark skipped on line 1 only), NDJSON's value, blank
// lines skipped, each value with its line.
func TestScanValues(t *testing.T) {
	cases := []struct {
		name, in string
		f        Format
		want     []string
		bad      int // the line of the error, 0: none
	}{
		{"header and columns", "\xef\xbb\xbfuser_id,name\r\nalice,A\r\n\"bob, jr\",B\r\n\r\n  carol  \r\n", CSV, []string{"alice", "bob, jr", "carol"}, 0},
		{"escaped quotes", `"say ""hi""",x` + "\n", CSV, []string{`say "hi"`}, 0},
		{"a header later is a value", "a\nvalue\n", CSV, []string{"a", "value"}, 0},
		{"network header", "NETWORK\n10.0.0.0/8\n", CSV, []string{"10.0.0.0/8"}, 0},
		{"text after a quote", "\"a\"b\n", CSV, nil, 1},
		{"ndjson", "{\"value\":\"a\"}\n\n{ \"value\" : \"b\\\"c\" }\n{\"value\":\"é\"}\n", NDJSON, []string{"a", `b"c`, "é"}, 0},
		{"ndjson number", "{\"value\":5}\n", NDJSON, nil, 1},
		{"ndjson array", "[\"a\"]\n", NDJSON, nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			err := scanValues(strings.NewReader(c.in), c.f, func(_ int, v string) error {
				got = append(got, v)
				return nil
			})
			var le *LineError
			if c.bad > 0 {
				if !errors.As(err, &le) || le.Line != c.bad {
					t.Fatalf("err %v, want a line error on line %d", err, c.bad)
				}
				return
			}
			if err != nil || strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
