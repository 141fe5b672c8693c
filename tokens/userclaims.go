package tokens

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// ClaimValues verifies the user token raw at instant now exactly as Verify
// does and returns its sub and the values of its claim name: the string,
// or the strings of an array (other JSON values count as none). The
// payload is read only after the signature is verified, so a value can be
// trusted as much as the sub.
func (u *UserVerifier) ClaimValues(raw string, now time.Time, name string) (user string, values []string, err error) {
	if user, err = u.Verify(raw, now); err != nil {
		return "", nil, err
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
	v, ok := claims[name]
	if !ok {
		return user, nil, nil
	}
	var one string
	if json.Unmarshal(v, &one) == nil {
		return user, []string{one}, nil
	}
	var many []string
	if json.Unmarshal(v, &many) == nil {
		return user, many, nil
	}
	return user, nil, nil
}
