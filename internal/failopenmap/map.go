// Package failopenmap writes the gateway side of a fail-open: the body of
// an nginx map from $msec (the current time, "seconds.milliseconds") to
// $anteroom_fail_open, which deploy/gateway's nginx files read when the
// gate cannot answer (the node or its Redis down, a 5xx, a timeout).
// While $anteroom_fail_open is not empty they pass visitors to the shop;
// otherwise they fail closed, as without it.
//
// nginx cannot compare numbers in its configuration, so the deadline is a
// regular expression: Below(n) matches exactly the decimal integers
// below n, and the map entry matches $msec while its whole seconds are
// below the deadline's. No module is needed (map and PCRE are in every
// nginx build), and the deadline ends by itself: nginx reads $msec on
// every request, so at the deadline the entry stops matching with no one
// acting and no reload.
package failopenmap

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Path is where deploy/gateway's nginx files include the map body from.
// It must exist: an empty file (or Map's answer for no deadline) fails
// open never.
const Path = "/etc/nginx/anteroom-fail-open.map"

// Map returns the body of the map for a fail-open until until (nginx
// map's include file): one entry whose value is until in RFC 3339 (UTC,
// whole seconds, which nginx passes on as X-Anteroom-Fail-Open) while
// $msec is before it. The deadline is until rounded down to the second, so
// it ends at most a second early, never late. A zero until returns a body
// that never fails open. generated names the command, for the comment.
func Map(until time.Time, generated string) string {
	if until.IsZero() {
		return fmt.Sprintf("# %s\n# No fail-open: when the gate cannot answer, nginx fails closed.\n", generated)
	}
	u := until.UTC().Truncate(time.Second)
	secs := u.Unix()
	stamp := u.Format(time.RFC3339)
	if secs <= 0 {
		return Map(time.Time{}, generated)
	}
	return fmt.Sprintf("# %s\n# When the gate cannot answer, nginx lets visitors through while $msec < %d (%s), then fails closed.\n\"~^(?:%s)[.]\" %q;\n",
		generated, secs, stamp, Below(uint64(secs)), stamp)
}

// Below returns a regular expression (PCRE and Go's RE2 alike, without
// anchors) that matches, in full, exactly the decimal integers written
// without leading zeros that are below n: every shorter number, and for
// each digit of n above 0 the numbers that share n's digits before it and
// have a smaller one there. It uses only [0-9] classes and counts, no
// backslashes, so nginx's configuration parser passes it on unchanged. n
// must be at least 1.
func Below(n uint64) string {
	d := strconv.FormatUint(n, 10)
	var alts []string
	if len(d) > 1 {
		alts = append(alts, "0", fmt.Sprintf("[1-9][0-9]{0,%d}", len(d)-2))
	} else if n > 0 {
		// single digit n: 0 .. n-1
		return fmt.Sprintf("[0-%c]", d[0]-1)
	}
	for i := 0; i < len(d); i++ {
		lo := byte('0')
		if i == 0 {
			lo = '1'
		}
		if d[i] <= lo {
			continue
		}
		alt := d[:i] + class(lo, d[i]-1)
		switch rest := len(d) - i - 1; {
		case rest == 1:
			alt += "[0-9]"
		case rest > 1:
			alt += fmt.Sprintf("[0-9]{%d}", rest)
		}
		alts = append(alts, alt)
	}
	return strings.Join(alts, "|")
}

// class is the character class of the digits lo to hi.
func class(lo, hi byte) string {
	if lo == hi {
		return string(lo)
	}
	return "[" + string(lo) + "-" + string(hi) + "]"
}
