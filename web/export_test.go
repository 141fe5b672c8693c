package web

// ToProblem is toProblem, for the error-map table test in package web_test
// (which may import packages that import web).
var ToProblem = toProblem

// HasRow reports whether a row of errorRows matches err.
func HasRow(err error) bool { return rowOf(err) != nil }
