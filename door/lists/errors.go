package lists

import (
	"errors"
	"fmt"
)

// The outcomes callers branch on (web/kit maps each to its problem).
var (
	// ErrNoList: no list of that name (404 no_list).
	ErrNoList = errors.New("lists: no such list")
	// ErrExists: a list of that name exists (409 exists).
	ErrExists = errors.New("lists: a list of that name exists")
	// ErrInUse: a sale's door references the list (409 in_use).
	ErrInUse = errors.New("lists: a sale references the list")
	// ErrTooLarge: an upload, or the list it would make, is over the
	// maximum (413 too_large).
	ErrTooLarge = errors.New("lists: over the maximum number of entries")
	// ErrUnknownList: a sale's door names a list that does not exist
	// (400, naming the list).
	ErrUnknownList = errors.New("lists: unknown list")
	// ErrInvalid: a bad list name, kind, format or value (400, with the
	// error's own text, written for staff).
	ErrInvalid = errors.New("lists: invalid")
)

// LineError is a malformed line of an upload: nothing of the upload was
// applied. Err wraps ErrInvalid.
type LineError struct {
	// Line counts from 1.
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns Err.
func (e *LineError) Unwrap() error { return e.Err }

// invalid is an ErrInvalid with a detail for staff.
func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
}
