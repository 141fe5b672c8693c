package salefile

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/anteroom/anteroom/event"
)

// Secrets — a webhook's, the shop's, the captcha's — are never written
// in a file, an export or a diff. A file names each as a reference to
// the environment of `anteroom apply`, secret: ${NAME}, resolved when
// the file is read (an unset variable is an error). A stored secret is
// kept: a file that names none keeps it (the admin API keeps it too),
// and a file that names one sends it only where none is stored — a new
// webhook URL, a shop or captcha without one — or, asked for by name
// (apply --rotate-secrets), everywhere. A diff shows "(stored)" and
// "(from ${NAME})", never a value; an export leaves secrets out, so
// applying it keeps them.

// secretRef is the form of a reference: ${NAME}.
var secretRef = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

// SecretRefPattern is secretRef's pattern, for the schema.
const SecretRefPattern = `^\$\{[A-Za-z_][A-Za-z0-9_]*\}$`

// placeholder stands in for a secret the file leaves to the node when
// the file's sale is checked before it is sent.
const placeholder = "a-stored-secret-kept-by-the-node"

// secretField is one secret of a configuration: its path and its value.
type secretField struct {
	path  string
	value *string
	set   bool // stored on the node (SecretSet, in a configuration the API answered)
	// match finds the same secret's field in another configuration (a
	// webhook by URL, as the node matches it).
	match func(c *event.Config) (stored bool, ok bool)
}

// secretsOf lists c's secret fields. A test walks event.Config for
// fields named secret and checks each is here.
func secretsOf(c *event.Config) []secretField {
	var out []secretField
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		url := w.URL
		out = append(out, secretField{fmt.Sprintf("webhooks[%d].secret", i), &w.Secret, w.SecretSet, func(o *event.Config) (bool, bool) {
			for j := range o.Webhooks {
				if o.Webhooks[j].URL == url {
					return o.Webhooks[j].SecretSet, true
				}
			}
			return false, false
		}})
	}
	out = append(out, secretField{"shop.secret", &c.Shop.Secret, c.Shop.SecretSet, func(o *event.Config) (bool, bool) { return o.Shop.SecretSet, true }})
	out = append(out, secretField{"limits.captcha.secret", &c.Limits.Captcha.Secret, c.Limits.Captcha.SecretSet, func(o *event.Config) (bool, bool) {
		return o.Limits.Captcha.SecretSet, true
	}})
	return out
}

// resolveSecrets replaces each ${NAME} of s with the variable's value,
// noting the reference in s.Refs; a literal secret is an error, and so
// is secret_set, which only the node answers.
func resolveSecrets(s *Sale, getenv func(string) string) error {
	c := &s.Config
	for i := range c.Webhooks {
		if c.Webhooks[i].SecretSet {
			return fmt.Errorf("webhooks[%d].secret_set is what the node answers; a file names a secret as secret: ${NAME}", i)
		}
	}
	if c.Shop.SecretSet || c.Limits.Captcha.SecretSet {
		return fmt.Errorf("secret_set is what the node answers; a file names a secret as secret: ${NAME}")
	}
	for _, f := range secretsOf(c) {
		if *f.value == "" {
			continue
		}
		m := secretRef.FindStringSubmatch(*f.value)
		if m == nil {
			return fmt.Errorf("%s: a secret is never written in the file: name an environment variable, secret: ${NAME}", f.path)
		}
		v := getenv(m[1])
		if v == "" {
			return fmt.Errorf("%s: the environment variable %s is not set", f.path, m[1])
		}
		if s.Refs == nil {
			s.Refs = map[string]string{}
		}
		s.Refs[f.path] = *f.value
		*f.value = v
	}
	return nil
}

// validate checks s's configuration as the node would, a secret the
// file leaves to the node standing in as stored (the node refuses the
// save if it has none).
func (s *Sale) validate() error {
	c, err := copyConfig(s.Config)
	if err != nil {
		return err
	}
	for _, f := range secretsOf(&c) {
		if *f.value == "" {
			*f.value = placeholder
		}
	}
	return c.Validate()
}

// copyConfig is a deep copy of c.
func copyConfig(c event.Config) (event.Config, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return c, err
	}
	var out event.Config
	return out, json.Unmarshal(raw, &out)
}

// secretChanges compares want's secrets with live's (nil: the sale is
// new): the changes to show, and the paths whose values to send.
func secretChanges(live, want *Sale, rotate bool) (changes []Change, send []string) {
	for _, f := range secretsOf(&want.Config) {
		ref, named := want.Refs[f.path]
		if !named {
			continue
		}
		stored := false
		if live != nil {
			stored, _ = f.match(&live.Config)
		}
		switch {
		case !stored:
			changes = append(changes, Change{Path: f.path, Old: none, New: "(from " + ref + ")"})
		case rotate:
			changes = append(changes, Change{Path: f.path, Old: "(stored)", New: "(from " + ref + ")"})
		default:
			continue
		}
		send = append(send, f.path)
	}
	return changes, send
}

// setSecrets returns o, the tree of c, with the secrets of c named by
// send.
func setSecrets(o object, c *event.Config, send []string) object {
	for _, f := range secretsOf(c) {
		if !slices.Contains(send, f.path) || *f.value == "" {
			continue
		}
		raw, _ := json.Marshal(*f.value)
		addMember(&o, strings.Split(strings.TrimSuffix(f.path, ".secret"), "."), member{"secret", json.RawMessage(raw)})
	}
	return o
}

// addMember appends m to the object at path ("webhooks[2]", "limits",
// "captcha") in o, making the objects of the path that are missing (a
// pruned tree left them out).
func addMember(o *object, path []string, m member) {
	name, idx, indexed := strings.Cut(path[0], "[")
	i := slices.IndexFunc(*o, func(x member) bool { return x.key == name })
	if i < 0 {
		if indexed {
			return
		}
		*o = append(*o, member{name, object{}})
		i = len(*o) - 1
	}
	at := &(*o)[i].value
	if indexed {
		n, _ := strconv.Atoi(strings.TrimSuffix(idx, "]"))
		list, _ := (*at).([]any)
		if n >= len(list) {
			return
		}
		at = &list[n]
	}
	obj, _ := (*at).(object)
	if len(path) == 1 {
		obj = append(obj, m)
	} else {
		addMember(&obj, path[1:], m)
	}
	*at = obj
}
