package playintegrity

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// pinned reads the protected header of a compact JOSE object of parts
// parts and checks that each header named in want has exactly its value,
// and that no "zip" or "crit" header is present (Google uses neither).
//
// It sorts refusals: a header that does not parse is ErrMalformed; one
// that parses but names another algorithm is ErrAttestation (a forgery
// attempt such as alg none, dir or HS256, not a transport fault). go-jose
// enforces the same pins again while parsing.
func pinned(compact string, parts int, want map[string]string) error {
	if strings.Count(compact, ".") != parts-1 {
		return fmt.Errorf("%w: %d parts, want %d", ErrMalformed, strings.Count(compact, ".")+1, parts)
	}
	first, _, _ := strings.Cut(compact, ".")
	raw, err := base64.RawURLEncoding.DecodeString(first)
	if err != nil {
		return fmt.Errorf("%w: protected header is not base64url", ErrMalformed)
	}
	var h map[string]json.RawMessage
	if err := json.Unmarshal(raw, &h); err != nil || h == nil {
		return fmt.Errorf("%w: protected header is not a JSON object", ErrMalformed)
	}
	for name, value := range want {
		var got string
		if err := json.Unmarshal(h[name], &got); err != nil {
			return fmt.Errorf("%w: header %q is not a string", ErrMalformed, name)
		}
		if got != value {
			return fmt.Errorf("%w: header %s %q refused, want %q", ErrAttestation, name, got, value)
		}
	}
	for _, name := range []string{"zip", "crit"} {
		if _, ok := h[name]; ok {
			return fmt.Errorf("%w: header %q refused", ErrAttestation, name)
		}
	}
	return nil
}
