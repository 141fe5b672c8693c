package tokens

import (
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// issuedClaims decodes p into c when p has exactly the form Issue writes,
//
//	{"iss":S,"sub":S,"aud":[S],"exp":N,"nbf":N,"iat":N,"jti":S,"event":S,"pos":N}
//
// with every S a string of printable ASCII without '"' or '\' and every N
// decimal digits without a leading zero (at most 15: a float64 holds them
// exactly), no space, nothing after. c then holds what json.Unmarshal would
// put there: the same strings, jwt.NumericDate's time.Unix(N, 0), the same
// pos. Anything else returns false with c untouched, and goes to
// json.Unmarshal.
func issuedClaims(p []byte, c *admissionClaims) bool {
	r := claimsReader{p: string(p)}
	iss := r.str(`{"iss":"`)
	sub := r.str(`","sub":"`)
	aud := r.str(`","aud":["`)
	exp := r.num(`"],"exp":`)
	nbf := r.num(`,"nbf":`)
	iat := r.num(`,"iat":`)
	jti := r.str(`,"jti":"`)
	event := r.str(`","event":"`)
	pos := r.num(`","pos":`)
	if r.bad || r.p != "}" {
		return false
	}
	c.Issuer, c.Subject, c.Audience, c.ID, c.Event = iss, sub, jwt.ClaimStrings{aud}, jti, event
	c.ExpiresAt, c.NotBefore, c.IssuedAt = seconds(exp), seconds(nbf), seconds(iat)
	c.Pos = &pos
	return true
}

// seconds is what jwt.NumericDate's UnmarshalJSON makes of a whole number
// of seconds.
func seconds(n int64) *jwt.NumericDate { return jwt.NewNumericDate(time.Unix(n, 0)) }

// claimsReader reads the parts of issuedClaims' form in order; the first
// mismatch sets bad.
type claimsReader struct {
	p   string
	bad bool
}

// str consumes prefix, then a string of printable ASCII other than '"'
// and '\' up to the next '"', which it leaves.
func (r *claimsReader) str(prefix string) string {
	if r.bad || !strings.HasPrefix(r.p, prefix) {
		r.bad = true
		return ""
	}
	r.p = r.p[len(prefix):]
	for i := range len(r.p) {
		switch b := r.p[i]; {
		case b == '"':
			s := r.p[:i]
			r.p = r.p[i:]
			return s
		case b < 0x20 || b > 0x7e || b == '\\':
			r.bad = true
			return ""
		}
	}
	r.bad = true
	return ""
}

// num consumes prefix, then 1 to 15 decimal digits without a leading zero.
func (r *claimsReader) num(prefix string) int64 {
	if r.bad || !strings.HasPrefix(r.p, prefix) {
		r.bad = true
		return 0
	}
	r.p = r.p[len(prefix):]
	n := 0
	for n < len(r.p) && r.p[n] >= '0' && r.p[n] <= '9' {
		n++
	}
	if n == 0 || n > 15 || (r.p[0] == '0' && n > 1) {
		r.bad = true
		return 0
	}
	v, err := strconv.ParseInt(r.p[:n], 10, 64)
	if err != nil {
		r.bad = true
		return 0
	}
	r.p = r.p[n:]
	return v
}
