package rules

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// CEL's standard library loads a time zone (a file read) on every call of
// a timestamp accessor with one: now.getHours("Europe/Paris"). Rules take
// the zone as a constant, loaded once at compile time.

// tzAccessors are the timestamp accessors, by name, that take a zone.
var tzAccessors = map[string]bool{
	overloads.TimeGetFullYear: true, overloads.TimeGetMonth: true, overloads.TimeGetDayOfYear: true,
	overloads.TimeGetDayOfMonth: true, overloads.TimeGetDate: true, overloads.TimeGetDayOfWeek: true,
	overloads.TimeGetHours: true, overloads.TimeGetMinutes: true, overloads.TimeGetSeconds: true,
	overloads.TimeGetMilliseconds: true,
}

// tzFields compute each accessor's value from a time in its zone, by
// overload id: CEL's numbering (months and days of the year and month
// from 0, getDate from 1, Sunday 0).
var tzFields = map[string]func(t time.Time) int64{
	overloads.TimestampToYearWithTz:                func(t time.Time) int64 { return int64(t.Year()) },
	overloads.TimestampToMonthWithTz:               func(t time.Time) int64 { return int64(t.Month()) - 1 },
	overloads.TimestampToDayOfYearWithTz:           func(t time.Time) int64 { return int64(t.YearDay()) - 1 },
	overloads.TimestampToDayOfMonthZeroBasedWithTz: func(t time.Time) int64 { return int64(t.Day()) - 1 },
	overloads.TimestampToDayOfMonthOneBasedWithTz:  func(t time.Time) int64 { return int64(t.Day()) },
	overloads.TimestampToDayOfWeekWithTz:           func(t time.Time) int64 { return int64(t.Weekday()) },
	overloads.TimestampToHoursWithTz:               func(t time.Time) int64 { return int64(t.Hour()) },
	overloads.TimestampToMinutesWithTz:             func(t time.Time) int64 { return int64(t.Minute()) },
	overloads.TimestampToSecondsWithTz:             func(t time.Time) int64 { return int64(t.Second()) },
	overloads.TimestampToMillisecondsWithTz:        func(t time.Time) int64 { return int64(t.Nanosecond() / 1e6) },
}

// location is zone tz as CEL reads it: an IANA name ("Europe/Paris") or
// an offset from UTC ("+05:30", "-08:00").
func location(tz string) (*time.Location, error) {
	h, m, ok := strings.Cut(tz, ":")
	if !ok {
		return time.LoadLocation(tz)
	}
	hr, err1 := strconv.Atoi(h)
	mn, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || hr < -23 || hr > 23 || mn < 0 || mn > 59 || len(h) < 2 || (h[0] != '+' && h[0] != '-') {
		return nil, errors.New("not a zone name nor an offset like +05:30")
	}
	off := hr*60 + mn
	if h[0] == '-' {
		off = hr*60 - mn
	}
	return time.FixedZone(tz, off*60), nil
}

// decorateTimeZone replaces an accessor call whose zone is a constant by
// a step that holds the loaded zone.
func decorateTimeZone(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	call, ok := i.(interpreter.InterpretableCall)
	if !ok {
		return i, nil
	}
	field, ok := tzFields[call.OverloadID()]
	if !ok {
		return i, nil
	}
	args := call.Args()
	c, ok := args[1].(interpreter.InterpretableConst)
	if !ok {
		return i, nil
	}
	s, ok := c.Value().(types.String)
	if !ok {
		return i, nil
	}
	loc, err := location(string(s))
	if err != nil {
		return nil, err // Compile refused it already
	}
	return &zoneStep{InterpretableCall: call, ts: args[0], loc: loc, field: field}, nil
}

// zoneStep is a timestamp accessor in a constant zone.
type zoneStep struct {
	interpreter.InterpretableCall
	ts    interpreter.InterpretableV2
	loc   *time.Location
	field func(time.Time) int64
}

// Eval implements interpreter.Interpretable.
func (z *zoneStep) Eval(a interpreter.Activation) ref.Val { return z.Exec(interpreter.AsFrame(a)) }

// Exec implements interpreter.InterpretableV2.
func (z *zoneStep) Exec(f *interpreter.ExecutionFrame) ref.Val {
	v := z.ts.Exec(f)
	t, ok := v.(types.Timestamp)
	if !ok {
		if types.IsUnknownOrError(v) {
			return v
		}
		return types.NewErr("no such overload")
	}
	return types.Int(z.field(t.In(z.loc)))
}
