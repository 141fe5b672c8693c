package claim

import "fmt"

// replyFields reads the values of one Lua script reply strictly: a field
// that is missing or of another type than the script's protocol says is an
// error, never a zero value (0 means "granted" or "released now" in most of
// the protocols). The first problem is kept in err; later reads return
// zero values.
type replyFields struct {
	what string
	vals []any
	err  error
}

// fields wraps vals, the reply of the script named what.
func fields(what string, vals []any) *replyFields { return &replyFields{what: what, vals: vals} }

func (r *replyFields) at(i int) (any, bool) {
	if r.err != nil {
		return nil, false
	}
	if i < 0 || i >= len(r.vals) {
		r.err = fmt.Errorf("%s: malformed reply: field %d missing (%d fields)", r.what, i+1, len(r.vals))
		return nil, false
	}
	return r.vals[i], true
}

// int returns field i, which must be an integer.
func (r *replyFields) int(i int) int64 {
	v, ok := r.at(i)
	if !ok {
		return 0
	}
	n, ok := v.(int64)
	if !ok {
		r.err = fmt.Errorf("%s: malformed reply: field %d is %T, want an integer", r.what, i+1, v)
	}
	return n
}

// str returns field i, which must be a string.
func (r *replyFields) str(i int) string {
	v, ok := r.at(i)
	if !ok {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		r.err = fmt.Errorf("%s: malformed reply: field %d is %T, want a string", r.what, i+1, v)
	}
	return s
}

// code returns field i, an integer reply code that must lie in [lo, hi].
func (r *replyFields) code(i int, lo, hi int64) int64 {
	c := r.int(i)
	if r.err == nil && (c < lo || c > hi) {
		r.err = fmt.Errorf("%s: malformed reply: unknown code %d", r.what, c)
	}
	return c
}
