package kit

// HasRow reports whether a row of errorRows matches err.
func HasRow(err error) bool { return rowOf(err) != nil }
