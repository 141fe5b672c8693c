// Package settings is a registry of a process's named settings. Each
// Setting has a flag, an environment variable, a default, a one-line doc
// and whether its value is secret; from one list of them the package
// builds the flags (Bind), reads the environment (Lookup), applies the
// values in effect (Bound.Apply), describes them for the start-up log with
// secrets and URL credentials redacted (Bound.LogValue, Redact) and
// renders the documentation table (Markdown, Splice).
//
// Precedence, the same for every setting: a flag given on the command line
// wins over the environment variable, which wins over the default. An
// environment variable set to the empty string counts as unset.
//
// The package knows nothing of what the settings mean: the list, with the
// parsing of each value, lives with the command that owns it.
package settings

import (
	"errors"
	"flag"
	"fmt"
)

// Setting is one named setting.
type Setting struct {
	// Name is the flag's name without the dash, and the setting's key in
	// the start-up log.
	Name string
	// Env is the environment variable read when the flag is not given.
	Env string
	// Default is the value when neither the flag nor the environment gives
	// one, written as it would be typed.
	Default string
	// Doc says in one line of plain text (no backquotes: the flag package
	// reads them as the value's name) what the setting does and what an
	// empty value means. It is the flag's usage and the table's meaning.
	Doc string
	// Secret settings are never logged: the start-up log shows only
	// whether they are set.
	Secret bool
	// Set receives the value in effect and stores it where the command
	// reads it, or says why the value is invalid. nil: nothing to store.
	Set func(string) error
}

// Usage is the flag's usage text: the doc, then the environment variable.
func (s Setting) Usage() string {
	return s.Doc + " (" + s.Env + ")"
}

// Lookup returns the value of s before flags: its environment variable
// when set and not empty, else its default. Commands that take a setting
// under a flag of their own read it with Lookup.
func Lookup(getenv func(string) string, s Setting) string {
	if v := getenv(s.Env); v != "" {
		return v
	}
	return s.Default
}

// Find returns the setting of list named name.
func Find(list []Setting, name string) (Setting, bool) {
	for _, s := range list {
		if s.Name == name {
			return s, true
		}
	}
	return Setting{}, false
}

// Check reports what is wrong with list as a registry: a setting without a
// name, variable or doc, a name or variable used twice, a doc of more than
// one line or with a backquote.
func Check(list []Setting) error {
	var errs []error
	names, envs := map[string]bool{}, map[string]bool{}
	for _, s := range list {
		switch {
		case s.Name == "" || s.Env == "" || s.Doc == "":
			errs = append(errs, fmt.Errorf("setting %q (%s): needs a name, a variable and a doc", s.Name, s.Env))
		case names[s.Name]:
			errs = append(errs, fmt.Errorf("setting %q: registered twice", s.Name))
		case envs[s.Env]:
			errs = append(errs, fmt.Errorf("setting %q: variable %s used twice", s.Name, s.Env))
		case !oneLine(s.Doc):
			errs = append(errs, fmt.Errorf("setting %q: doc must be one line of plain text without backquotes or |", s.Name))
		}
		names[s.Name], envs[s.Env] = true, true
	}
	return errors.Join(errs...)
}

func oneLine(s string) bool {
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '`' || r == '|' {
			return false
		}
	}
	return true
}

// Source is where a value in effect came from.
type Source string

// The sources of a value, in increasing precedence.
const (
	FromDefault Source = "default"
	FromEnv     Source = "env"
	FromFlag    Source = "flag"
)

// Bound is a list of settings registered on a flag set. Read it after the
// flag set is parsed. It is not safe for concurrent use.
type Bound struct {
	fs      *flag.FlagSet
	list    []Setting
	values  []*string
	fromEnv []bool
	// hidden holds the environment's value of a setting whose flag shows
	// the default instead, because Redact would change the value.
	hidden []*string
}

// Bind registers every setting of list as a string flag on fs whose
// default is the setting's Lookup, so that -h shows the value the
// environment gives; but a value Redact would change (a secret, a URL
// with a password) is not shown: its flag shows the registry's default
// and the environment's value still applies when the flag is not given.
// A name already defined on fs panics, as flag.FlagSet.String does: that
// is a programming error.
func Bind(fs *flag.FlagSet, getenv func(string) string, list []Setting) *Bound {
	b := &Bound{fs: fs, list: list}
	for _, s := range list {
		v, hidden := Lookup(getenv, s), (*string)(nil)
		if Redact(s, v) != v {
			env := v
			hidden, v = &env, s.Default
		}
		b.values = append(b.values, fs.String(s.Name, v, s.Usage()))
		b.hidden = append(b.hidden, hidden)
		b.fromEnv = append(b.fromEnv, getenv(s.Env) != "")
	}
	return b
}

// value is the value in effect of the i-th setting.
func (b *Bound) value(i int) string {
	if b.hidden[i] != nil && b.source(i) != FromFlag {
		return *b.hidden[i]
	}
	return *b.values[i]
}

// Value returns the value in effect of the setting named name and where
// it came from; ok is false when no such setting is bound.
func (b *Bound) Value(name string) (value string, from Source, ok bool) {
	for i, s := range b.list {
		if s.Name == name {
			return b.value(i), b.source(i), true
		}
	}
	return "", "", false
}

func (b *Bound) source(i int) Source {
	given := false
	b.fs.Visit(func(f *flag.Flag) { given = given || f.Name == b.list[i].Name })
	switch {
	case given:
		return FromFlag
	case b.fromEnv[i]:
		return FromEnv
	}
	return FromDefault
}

// Apply hands every value in effect to its setting's Set, in list order,
// and returns every error together (errors.Join): a misconfigured node
// hears of all its mistakes at once.
func (b *Bound) Apply() error {
	var errs []error
	for i, s := range b.list {
		if s.Set == nil {
			continue
		}
		if err := s.Set(b.value(i)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Names returns the names of the settings whose value came from src, in
// list order.
func (b *Bound) Names(src Source) []string {
	var names []string
	for i, s := range b.list {
		if b.source(i) == src {
			names = append(names, s.Name)
		}
	}
	return names
}
