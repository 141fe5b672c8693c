package salefile

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Change is one field that applying a sale changes.
type Change struct {
	// Path is the field's path in the file: limits.join.ip.per_second,
	// webhooks[1].url, page.colors.primary.
	Path string
	// Old and New are its values as compact JSON, "(none)" for absent;
	// a secret's are "(stored)" or "(from ${NAME})", never a value.
	Old, New string
}

func (c Change) String() string { return c.Path + ": " + c.Old + " → " + c.New }

const none = "(none)"

// maxShown bounds a value shown in a diff (a page template is long).
const maxShown = 120

// Diff is what applying want changes in live (nil: a sale to create),
// field by field in the file's order, and the secret paths whose values
// the save must send (secrets.go; rotate sends every secret the file
// names). Both are compared in their file form: a value left out equals
// its default, and the node's fields are not compared.
func Diff(live, want *Sale, rotate bool) (changes []Change, send []string, err error) {
	var old any
	if live != nil {
		o, err := live.tree(false)
		if err != nil {
			return nil, nil, err
		}
		old = o
	}
	next, err := want.tree(false)
	if err != nil {
		return nil, nil, err
	}
	diffTree("", old, next, &changes)
	sc, send := secretChanges(live, want, rotate)
	return append(changes, sc...), send, nil
}

// diffTree appends the differences between a and b under path.
func diffTree(path string, a, b any, out *[]Change) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	ao, aObj := a.(object)
	bo, bObj := b.(object)
	if (aObj || a == nil) && (bObj || b == nil) && (aObj || bObj) && len(ao)+len(bo) > 0 {
		for _, m := range bo {
			diffTree(join(m.key), ao.get(m.key), m.value, out)
		}
		for _, m := range ao {
			if bo.get(m.key) == nil {
				diffTree(join(m.key), m.value, nil, out)
			}
		}
		return
	}
	al, aList := a.([]any)
	bl, bList := b.([]any)
	if aList && bList {
		for i := range max(len(al), len(bl)) {
			var x, y any
			if i < len(al) {
				x = al[i]
			}
			if i < len(bl) {
				y = bl[i]
			}
			diffTree(fmt.Sprintf("%s[%d]", path, i), x, y, out)
		}
		return
	}
	if x, y := shown(a), shown(b); x != y {
		*out = append(*out, Change{Path: path, Old: x, New: y})
	}
}

// shown is t as a diff shows it: compact JSON, long values cut.
func shown(t any) string {
	if t == nil {
		return none
	}
	raw := jsonOf(t)
	if len(raw) <= maxShown {
		return string(raw)
	}
	cut := raw[:maxShown]
	for !utf8.Valid(cut) {
		cut = cut[:len(cut)-1]
	}
	return fmt.Sprintf("%s… (%d bytes)", bytes.TrimSpace(cut), len(raw))
}

// Format writes changes one a line, indented by indent.
func Format(changes []Change, indent string) string {
	var b strings.Builder
	for _, c := range changes {
		b.WriteString(indent + c.String() + "\n")
	}
	return b.String()
}
