package tokens

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// VerifyClaims verifies the user token raw at instant now exactly as
// Verify does and returns its sub and, for each of names the token
// carries, the claim's values: the string, or the strings of an array
// (other JSON values count as none). One verification serves every name.
// The payload is read only after the signature is verified, so a value can
// be trusted as much as the sub.
func (u *UserVerifier) VerifyClaims(raw string, now time.Time, names []string) (user string, values map[string][]string, err error) {
	if user, err = u.Verify(raw, now); err != nil || len(names) == 0 {
		return user, nil, err
	}
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return user, nil, nil
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return user, nil, nil
	}
	var claims map[string]json.RawMessage
	if json.Unmarshal(payload, &claims) != nil {
		return user, nil, nil
	}
	values = map[string][]string{}
	for _, name := range names {
		v, ok := claims[name]
		if !ok {
			continue
		}
		var one string
		var many []string
		if json.Unmarshal(v, &one) == nil {
			values[name] = []string{one}
		} else if json.Unmarshal(v, &many) == nil {
			values[name] = many
		}
	}
	return user, values, nil
}
