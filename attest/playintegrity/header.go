package playintegrity

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// pinned reads the protected header of what, a compact JOSE object of
// parts parts, and checks that each header named in want has exactly its
// value, and that no "zip" or "crit" header is present (Google uses
// neither).
//
// It sorts refusals: an object whose header does not parse is refused
// with unparsed (ErrMalformed for the token as sent); one that parses but
// names another algorithm with ErrAttestation (a forgery attempt such as
// alg none, dir or HS256, not a transport fault). go-jose enforces the
// same pins again while parsing.
func pinned(what, compact string, parts int, want map[string]string, unparsed error) error {
	if n := strings.Count(compact, ".") + 1; n != parts {
		return fmt.Errorf("%w: %s has %d parts, want %d", unparsed, what, n, parts)
	}
	first, _, _ := strings.Cut(compact, ".")
	raw, err := base64.RawURLEncoding.DecodeString(first)
	if err != nil {
		return fmt.Errorf("%w: %s header is not base64url", unparsed, what)
	}
	var h map[string]json.RawMessage
	if err := json.Unmarshal(raw, &h); err != nil || h == nil {
		return fmt.Errorf("%w: %s header is not a JSON object", unparsed, what)
	}
	for name, value := range want {
		var got string
		if err := json.Unmarshal(h[name], &got); err != nil {
			return fmt.Errorf("%w: %s header %q is not a string", unparsed, what, name)
		}
		if got != value {
			return fmt.Errorf("%w: %s %s %q refused, want %q", ErrAttestation, what, name, got, value)
		}
	}
	for _, name := range []string{"zip", "crit"} {
		if _, ok := h[name]; ok {
			return fmt.Errorf("%w: %s header %q refused", ErrAttestation, what, name)
		}
	}
	return nil
}
