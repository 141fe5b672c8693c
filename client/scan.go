package client

import (
	"encoding/json"
	"errors"
	"strconv"
)

// errSyntax is a body that is not one JSON object.
var errSyntax = errors.New("anteroom: answer is not a JSON object")

// kind is a JSON value's type as the scanner sees it.
type kind byte

const (
	kString kind = iota + 1 // val is the text between the quotes, escapes undone only by str
	kNumber
	kTrue
	kFalse
	kNull
	kNested // an object or array; val is its JSON text
)

// scanner walks the members of one JSON object without allocating: the
// node's answers are flat objects, so a hand-written walk is a fraction
// of encoding/json's cost, and the status poll is the hot path of every
// crowd. Strings with escapes fall back to encoding/json.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// open reads the object's '{'.
func (s *scanner) open() error {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return errSyntax
	}
	s.i++
	return nil
}

// member reads the next member: its key (the raw text between the quotes),
// its value's kind and text. done is true after the closing '}', which
// must end the input (white space aside).
func (s *scanner) member(first bool) (key, val []byte, k kind, escaped, done bool, err error) {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		s.ws()
		if s.i != len(s.b) {
			return nil, nil, 0, false, false, errSyntax
		}
		return nil, nil, 0, false, true, nil
	}
	if !first {
		if s.i >= len(s.b) || s.b[s.i] != ',' {
			return nil, nil, 0, false, false, errSyntax
		}
		s.i++
		s.ws()
	}
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, nil, 0, false, false, errSyntax
	}
	key, kesc, err := s.str()
	if err != nil || kesc { // the node's keys are plain words
		return nil, nil, 0, false, false, errSyntax
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return nil, nil, 0, false, false, errSyntax
	}
	s.i++
	s.ws()
	if s.i >= len(s.b) {
		return nil, nil, 0, false, false, errSyntax
	}
	switch c := s.b[s.i]; {
	case c == '"':
		val, escaped, err = s.str()
		return key, val, kString, escaped, false, err
	case c == '{' || c == '[':
		start := s.i
		if err := s.nested(); err != nil {
			return nil, nil, 0, false, false, err
		}
		return key, s.b[start:s.i], kNested, false, false, nil
	case c == '-' || '0' <= c && c <= '9':
		start := s.i
		for s.i < len(s.b) && numByte(s.b[s.i]) {
			s.i++
		}
		return key, s.b[start:s.i], kNumber, false, false, nil
	default:
		for _, lit := range [...]struct {
			text string
			k    kind
		}{{"true", kTrue}, {"false", kFalse}, {"null", kNull}} {
			if len(s.b)-s.i >= len(lit.text) && string(s.b[s.i:s.i+len(lit.text)]) == lit.text {
				s.i += len(lit.text)
				return key, nil, lit.k, false, false, nil
			}
		}
	}
	return nil, nil, 0, false, false, errSyntax
}

func numByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// str reads a string starting at its quote and returns its raw text.
func (s *scanner) str() (raw []byte, escaped bool, err error) {
	s.i++ // the quote
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			s.i += 2
		case c < 0x20:
			return nil, false, errSyntax
		default:
			s.i++
		}
	}
	return nil, false, errSyntax
}

// nested skips an object or array, counting brackets outside strings; it
// is checked by encoding/json only when a caller decodes it.
func (s *scanner) nested() error {
	depth := 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			if _, _, err := s.str(); err != nil {
				return err
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i++
				return nil
			}
		}
		s.i++
	}
	return errSyntax
}

// text returns a string value: raw as is, or with its escapes undone.
func text(raw []byte, escaped bool) (string, error) {
	if !escaped {
		return string(raw), nil
	}
	var out string
	quoted := make([]byte, 0, len(raw)+2)
	quoted = append(append(append(quoted, '"'), raw...), '"')
	if err := json.Unmarshal(quoted, &out); err != nil {
		return "", errSyntax
	}
	return out, nil
}

// integer reads a JSON number as an int64: integers exactly, others
// truncated (as encoding/json into a float64 and then a conversion).
func integer(raw []byte) (int64, error) {
	neg := len(raw) > 0 && raw[0] == '-'
	digits := raw
	if neg {
		digits = raw[1:]
	}
	if len(digits) > 0 && len(digits) < 19 {
		var n int64
		plain := true
		for _, c := range digits {
			if c < '0' || c > '9' {
				plain = false
				break
			}
			n = n*10 + int64(c-'0')
		}
		if plain {
			if neg {
				n = -n
			}
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, errSyntax
	}
	return int64(f), nil
}
